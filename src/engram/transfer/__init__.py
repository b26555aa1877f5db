"""engram.transfer: memories between a memory store and Agent Cartridges (issue 14 point 3), and
in and out as Portable AI Memory (PAM) 1.0 documents.

Spec: lboel/acx@85f1358 SPEC.md §7; docs/spec/acx.md §8.4. A domain package above
``engram.memory`` and ``engram.cartridge`` (which never import each other) and below the
adapters: :func:`export_cartridge` (over :func:`ring_records`) for export,
:func:`import_cartridge` for import, both streamed in batches (issue 33), one
:class:`TransferRecord` type that keeps unknown members. PAM (portable-ai-memory.org/spec/v1.0,
docs/spec/pam.md): :func:`export_pam` and :func:`import_pam`, and
:func:`import_pam_file` / :func:`export_pam_file`, which read and write a document's file a
memory at a time.

Names are bound on first use (engram.core.lazy): ``engram cartridge export`` and ``import`` need
only the bridge and the export, not PAM's validators (jsonschema) or signing.
"""

import typing

from engram.core.lazy import lazy_attributes as _lazy_attributes

if typing.TYPE_CHECKING:
    from engram.transfer._bridge import ImportSummary, import_cartridge
    from engram.transfer._erase import erase_memories, erase_subject_memories
    from engram.transfer._export import ExportSummary, export_cartridge, ring_records
    from engram.transfer._pam_export import PamExport, export_pam, export_pam_file
    from engram.transfer._pam_format import check_document as check_pam_document
    from engram.transfer._pam_format import parse_instant as parse_pam_instant
    from engram.transfer._pam_import import PamImport, import_pam
    from engram.transfer._pam_import_file import PamFile, import_pam_file, open_pam_file
    from engram.transfer._pam_read import MAX_DOCUMENT_BYTES as MAX_PAM_BYTES
    from engram.transfer._pam_read import PamLimits
    from engram.transfer._pam_signature import read_public_key as read_pam_public_key
    from engram.transfer._pam_signature import signature_block, signature_payload
    from engram.transfer._pam_signature import verify_signature as verify_pam_signature
    from engram.transfer._pam_tables import PAM_COMPONENT
    from engram.transfer._record import TransferRecord

_LAZY = {
    "ImportSummary": "engram.transfer._bridge",
    "import_cartridge": "engram.transfer._bridge",
    "ExportSummary": "engram.transfer._export",
    "export_cartridge": "engram.transfer._export",
    "ring_records": "engram.transfer._export",
    "erase_memories": "engram.transfer._erase",
    "erase_subject_memories": "engram.transfer._erase",
    "PamExport": "engram.transfer._pam_export",
    "export_pam": "engram.transfer._pam_export",
    "export_pam_file": "engram.transfer._pam_export",
    "check_pam_document": "engram.transfer._pam_format:check_document",
    "parse_pam_instant": "engram.transfer._pam_format:parse_instant",
    "read_pam_public_key": "engram.transfer._pam_signature:read_public_key",
    "signature_block": "engram.transfer._pam_signature",
    "signature_payload": "engram.transfer._pam_signature",
    "verify_pam_signature": "engram.transfer._pam_signature:verify_signature",
    "PamImport": "engram.transfer._pam_import",
    "import_pam": "engram.transfer._pam_import",
    "import_pam_file": "engram.transfer._pam_import_file",
    "open_pam_file": "engram.transfer._pam_import_file",
    "PamFile": "engram.transfer._pam_import_file",
    "MAX_PAM_BYTES": "engram.transfer._pam_read:MAX_DOCUMENT_BYTES",
    "PamLimits": "engram.transfer._pam_read",
    "PAM_COMPONENT": "engram.transfer._pam_tables",
    "TransferRecord": "engram.transfer._record",
}

__all__ = [
    "MAX_PAM_BYTES",
    "PAM_COMPONENT",
    "ExportSummary",
    "ImportSummary",
    "PamExport",
    "PamFile",
    "PamImport",
    "PamLimits",
    "TransferRecord",
    "check_pam_document",
    "erase_memories",
    "erase_subject_memories",
    "export_cartridge",
    "export_pam",
    "export_pam_file",
    "import_cartridge",
    "import_pam",
    "import_pam_file",
    "open_pam_file",
    "parse_pam_instant",
    "read_pam_public_key",
    "ring_records",
    "signature_block",
    "signature_payload",
    "verify_pam_signature",
]

if not typing.TYPE_CHECKING:  # type checkers read the imports above
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())

"""engram.transfer: memories between a memory store and Agent Cartridges (issue 14 point 3), and
in and out as Portable AI Memory (PAM) 1.0 documents.

Spec: lboel/acx@85f1358 SPEC.md §7; docs/spec/acx.md §8.4. A domain package above
``engram.memory`` and ``engram.cartridge`` (which never import each other) and below the
adapters: :func:`ring_records` for export, :func:`import_cartridge` for import, one
:class:`TransferRecord` type that keeps unknown members. PAM (portable-ai-memory.org/spec/v1.0,
docs/spec/pam.md): :func:`export_pam` and :func:`import_pam`.
"""

from engram.transfer._bridge import ImportSummary, import_cartridge, ring_records
from engram.transfer._erase import erase_memories, erase_subject_memories
from engram.transfer._pam_export import PamExport, export_pam
from engram.transfer._pam_format import check_document as check_pam_document
from engram.transfer._pam_format import parse_instant as parse_pam_instant
from engram.transfer._pam_format import read_public_key as read_pam_public_key
from engram.transfer._pam_format import signature_block, signature_payload
from engram.transfer._pam_format import verify_signature as verify_pam_signature
from engram.transfer._pam_import import PamImport, import_pam
from engram.transfer._pam_tables import PAM_COMPONENT
from engram.transfer._record import TransferRecord

__all__ = [
    "PAM_COMPONENT",
    "ImportSummary",
    "PamExport",
    "PamImport",
    "TransferRecord",
    "check_pam_document",
    "erase_memories",
    "erase_subject_memories",
    "export_pam",
    "import_cartridge",
    "import_pam",
    "parse_pam_instant",
    "read_pam_public_key",
    "ring_records",
    "signature_block",
    "signature_payload",
    "verify_pam_signature",
]

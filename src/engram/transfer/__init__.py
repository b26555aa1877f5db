"""engram.transfer: memories between a memory store and Agent Cartridges (issue 14 point 3).

Spec: lboel/acx@85f1358 SPEC.md §7; docs/spec/acx.md §8.4. A domain package above
``engram.memory`` and ``engram.cartridge`` (which never import each other) and below the
adapters: :func:`ring_records` for export, :func:`import_cartridge` for import, one
:class:`TransferRecord` type that keeps unknown members.
"""

from engram.transfer._bridge import ImportSummary, import_cartridge, ring_records
from engram.transfer._record import TransferRecord

__all__ = ["ImportSummary", "TransferRecord", "import_cartridge", "ring_records"]

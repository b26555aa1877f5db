"""engram.cartridge's names for other engram packages, benchmarks and tests: not public API.

The pieces of the format that other engram packages and the tests build on: the sqlar codec, record
and capability checks, fingerprints, the §8.5 negotiation steps, the scrub scanner, the record
exports and queries the CLI prints, and the file's fixed numbers (application id, user version).

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.cartridge`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.cartridge._agent import ExportedRecords, export_records, set_memories
    from engram.cartridge._attestations import level_count, list_attestations
    from engram.cartridge._build import Built
    from engram.cartridge._capabilities import (
        agent_card,
        build_capability,
        capability_id,
        capability_problems,
        to_purl,
    )
    from engram.cartridge._format import APPLICATION_ID, USER_VERSION
    from engram.cartridge._harness import (
        REQUIRED_ROLES,
        accepts,
        default_requirements,
        harness_problems,
        negotiate,
        preflight,
    )
    from engram.cartridge._host import COMPLIANCE_FILE, harness_of
    from engram.cartridge._package import build_package_spec, lance_schema
    from engram.cartridge._paths import check_path
    from engram.cartridge._record_tables import RECORD_TABLES, RecordTable
    from engram.cartridge._records import (
        artifact_fingerprint,
        canonical_repo_identity,
        codebase_fingerprint,
        export_record,
        merge_key,
        record_problems,
        repo_literals,
        resolve_conflict,
        validate_record,
    )
    from engram.cartridge._rom import MemoryRow, payload_record
    from engram.cartridge._schemas import issues as schema_issues
    from engram.cartridge._scrub import Finding, scan
    from engram.cartridge._skills import FRONTMATTER_KEYS
    from engram.cartridge._sqlar import Entry as SqlarEntry
    from engram.cartridge._sqlar import decode as decode_sqlar
    from engram.cartridge._sqlar import encode as encode_sqlar

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "record_problems": "engram.cartridge._records",
    "repo_literals": "engram.cartridge._records",
    "ExportedRecords": "engram.cartridge._agent",
    "export_records": "engram.cartridge._agent",
    "set_memories": "engram.cartridge._agent",
    "level_count": "engram.cartridge._attestations",
    "Built": "engram.cartridge._build",
    "list_attestations": "engram.cartridge._attestations",
    "agent_card": "engram.cartridge._capabilities",
    "build_capability": "engram.cartridge._capabilities",
    "capability_id": "engram.cartridge._capabilities",
    "capability_problems": "engram.cartridge._capabilities",
    "to_purl": "engram.cartridge._capabilities",
    "APPLICATION_ID": "engram.cartridge._format",
    "USER_VERSION": "engram.cartridge._format",
    "REQUIRED_ROLES": "engram.cartridge._harness",
    "accepts": "engram.cartridge._harness",
    "default_requirements": "engram.cartridge._harness",
    "harness_problems": "engram.cartridge._harness",
    "negotiate": "engram.cartridge._harness",
    "preflight": "engram.cartridge._harness",
    "COMPLIANCE_FILE": "engram.cartridge._host",
    "harness_of": "engram.cartridge._host",
    "build_package_spec": "engram.cartridge._package",
    "lance_schema": "engram.cartridge._package",
    "check_path": "engram.cartridge._paths",
    "RECORD_TABLES": "engram.cartridge._record_tables",
    "RecordTable": "engram.cartridge._record_tables",
    "artifact_fingerprint": "engram.cartridge._records",
    "canonical_repo_identity": "engram.cartridge._records",
    "codebase_fingerprint": "engram.cartridge._records",
    "export_record": "engram.cartridge._records",
    "merge_key": "engram.cartridge._records",
    "resolve_conflict": "engram.cartridge._records",
    "MemoryRow": "engram.cartridge._rom",
    "payload_record": "engram.cartridge._rom",
    "validate_record": "engram.cartridge._records",
    "schema_issues": "engram.cartridge._schemas:issues",
    "Finding": "engram.cartridge._scrub",
    "scan": "engram.cartridge._scrub",
    "FRONTMATTER_KEYS": "engram.cartridge._skills",
    "SqlarEntry": "engram.cartridge._sqlar:Entry",
    "decode_sqlar": "engram.cartridge._sqlar:decode",
    "encode_sqlar": "engram.cartridge._sqlar:encode",
}

__all__ = [
    "APPLICATION_ID",
    "COMPLIANCE_FILE",
    "FRONTMATTER_KEYS",
    "RECORD_TABLES",
    "REQUIRED_ROLES",
    "USER_VERSION",
    "Built",
    "ExportedRecords",
    "Finding",
    "MemoryRow",
    "RecordTable",
    "SqlarEntry",
    "accepts",
    "agent_card",
    "artifact_fingerprint",
    "build_capability",
    "build_package_spec",
    "canonical_repo_identity",
    "capability_id",
    "capability_problems",
    "check_path",
    "codebase_fingerprint",
    "decode_sqlar",
    "default_requirements",
    "encode_sqlar",
    "export_record",
    "export_records",
    "harness_of",
    "harness_problems",
    "lance_schema",
    "level_count",
    "list_attestations",
    "merge_key",
    "negotiate",
    "payload_record",
    "preflight",
    "record_problems",
    "repo_literals",
    "resolve_conflict",
    "scan",
    "schema_issues",
    "set_memories",
    "to_purl",
    "validate_record",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())

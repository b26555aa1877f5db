"""engram.cartridge: Agent Cartridges (.acx) exactly as lboel/acx@85f1358 SPEC.md §3-§8 shapes them.

Our decisions are in docs/spec/acx.md. Read with :meth:`Cartridge.open` + :func:`verify` (a
:class:`TrustReport` in the §4.5 taxonomy of ``engram.trust``), see what a file holds with
:func:`load_rom`, :func:`derive_skills` and :func:`spec_report`; produce with
:func:`package_contents` + :func:`write`, :func:`strip` and :func:`upgrade`; use in a host with
:func:`activate`, :func:`check_host`, :func:`install_skills` and :func:`roster`.
"""

from engram.cartridge._agent import (
    ExportOptions,
    collect_skills,
    export_records,
    package_contents,
    set_memories,
)
from engram.cartridge._attestations import (
    LEVEL_ATTESTATION_TYPE,
    AttestationRow,
    level_count,
    list_attestations,
)
from engram.cartridge._build import Built, Contents, Stripped, strip, write, write_save
from engram.cartridge._capabilities import (
    agent_card,
    build_capability,
    capability_id,
    capability_problems,
    to_purl,
)
from engram.cartridge._container import Cartridge
from engram.cartridge._embed import ENGINE, embed
from engram.cartridge._errors import (
    ActivationRefused,
    CartridgeTampered,
    LegacyLayout,
    ScrubBlocked,
    UntrustedCartridge,
)
from engram.cartridge._format import APPLICATION_ID, SPEC_DDL, USER_VERSION, Limits
from engram.cartridge._harness import (
    REQUIRED_ROLES,
    Host,
    HostTool,
    accepts,
    default_requirements,
    harness_problems,
    negotiate,
    preflight,
)
from engram.cartridge._host import (
    COMPLIANCE_FILE,
    DEFAULT_ACCEPT,
    HOST_SKILL_DIRS,
    Activation,
    RosterLine,
    activate,
    check_host,
    harness_of,
    install_skills,
    require_state,
    roster,
)
from engram.cartridge._host_descriptor import load_host_descriptor
from engram.cartridge._legacy import Upgraded, upgrade
from engram.cartridge._package import (
    SpecReport,
    build_package_spec,
    engine_of,
    lance_schema,
    spec_report,
)
from engram.cartridge._paths import check_path
from engram.cartridge._records import (
    MergeResult,
    artifact_fingerprint,
    canonical_repo_identity,
    codebase_fingerprint,
    export_record,
    merge_records,
    record_problems,
    validate_record,
)
from engram.cartridge._rom import MemoryRow, Rom, load_rom
from engram.cartridge._schemas import issues as schema_issues
from engram.cartridge._scrub import Finding, scan
from engram.cartridge._shape import compile_shape
from engram.cartridge._skills import FRONTMATTER_KEYS, Skill, derive_skills
from engram.cartridge._sqlar import Entry as SqlarEntry
from engram.cartridge._sqlar import decode as decode_sqlar
from engram.cartridge._sqlar import encode as encode_sqlar
from engram.cartridge._starter import starter_package, write_starter_package
from engram.cartridge._verify import TrustReport, verify, verify_rom

__all__ = [
    "APPLICATION_ID",
    "COMPLIANCE_FILE",
    "DEFAULT_ACCEPT",
    "ENGINE",
    "FRONTMATTER_KEYS",
    "HOST_SKILL_DIRS",
    "LEVEL_ATTESTATION_TYPE",
    "REQUIRED_ROLES",
    "SPEC_DDL",
    "USER_VERSION",
    "Activation",
    "ActivationRefused",
    "AttestationRow",
    "Built",
    "Cartridge",
    "CartridgeTampered",
    "Contents",
    "ExportOptions",
    "Finding",
    "Host",
    "HostTool",
    "LegacyLayout",
    "Limits",
    "MemoryRow",
    "MergeResult",
    "Rom",
    "RosterLine",
    "ScrubBlocked",
    "Skill",
    "SpecReport",
    "SqlarEntry",
    "Stripped",
    "TrustReport",
    "UntrustedCartridge",
    "Upgraded",
    "accepts",
    "activate",
    "agent_card",
    "artifact_fingerprint",
    "build_capability",
    "build_package_spec",
    "canonical_repo_identity",
    "capability_id",
    "capability_problems",
    "check_host",
    "check_path",
    "codebase_fingerprint",
    "collect_skills",
    "compile_shape",
    "decode_sqlar",
    "default_requirements",
    "derive_skills",
    "embed",
    "encode_sqlar",
    "engine_of",
    "export_record",
    "export_records",
    "harness_of",
    "harness_problems",
    "install_skills",
    "lance_schema",
    "level_count",
    "list_attestations",
    "load_host_descriptor",
    "load_rom",
    "merge_records",
    "negotiate",
    "package_contents",
    "preflight",
    "record_problems",
    "require_state",
    "roster",
    "scan",
    "schema_issues",
    "set_memories",
    "spec_report",
    "starter_package",
    "strip",
    "to_purl",
    "upgrade",
    "validate_record",
    "verify",
    "verify_rom",
    "write",
    "write_save",
    "write_starter_package",
]

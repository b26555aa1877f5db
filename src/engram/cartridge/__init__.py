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
from engram.cartridge._build import Built, Contents, Stripped, strip, write, write_save
from engram.cartridge._capabilities import agent_card, build_capability, capability_problems
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
    default_requirements,
    harness_problems,
    negotiate,
)
from engram.cartridge._host import (
    COMPLIANCE_FILE,
    DEFAULT_ACCEPT,
    HOST_SKILL_DIRS,
    Activation,
    RosterLine,
    activate,
    check_host,
    install_skills,
    require_state,
    roster,
)
from engram.cartridge._legacy import Upgraded, upgrade
from engram.cartridge._package import SpecReport, engine_of, spec_report
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
from engram.cartridge._scrub import Finding, scan
from engram.cartridge._skills import Skill, derive_skills
from engram.cartridge._verify import TrustReport, verify, verify_rom

__all__ = [
    "APPLICATION_ID",
    "COMPLIANCE_FILE",
    "DEFAULT_ACCEPT",
    "ENGINE",
    "HOST_SKILL_DIRS",
    "REQUIRED_ROLES",
    "SPEC_DDL",
    "USER_VERSION",
    "Activation",
    "ActivationRefused",
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
    "Stripped",
    "TrustReport",
    "UntrustedCartridge",
    "Upgraded",
    "activate",
    "agent_card",
    "artifact_fingerprint",
    "build_capability",
    "canonical_repo_identity",
    "capability_problems",
    "check_host",
    "codebase_fingerprint",
    "collect_skills",
    "default_requirements",
    "derive_skills",
    "embed",
    "engine_of",
    "export_record",
    "export_records",
    "harness_problems",
    "install_skills",
    "load_rom",
    "merge_records",
    "negotiate",
    "package_contents",
    "record_problems",
    "require_state",
    "roster",
    "scan",
    "set_memories",
    "spec_report",
    "strip",
    "upgrade",
    "validate_record",
    "verify",
    "verify_rom",
    "write",
    "write_save",
]

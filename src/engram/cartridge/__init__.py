"""engram.cartridge: Agent Cartridges (.acx), one signed SQLite file of skills and memory.

Spec: lboel/acx@85f1358 SPEC.md §12 items 1-11; our normative text is
docs/spec/acx.md. Produce with :func:`build` / :func:`seal` / :func:`strip`, read with
:meth:`Cartridge.open` + :func:`verify` (a :class:`TrustReport` whose state is one of
:class:`TrustState`), move memory with :func:`plan_import`, and boot with :func:`activate`.
"""

from engram.cartridge._activation import (
    ACTIVATION_FILE,
    DEFAULT_ACCEPT,
    Activation,
    activate,
    require_state,
)
from engram.cartridge._build import (
    Embed,
    SealResult,
    build,
    collect_skills,
    seal,
    strip,
    write_save,
)
from engram.cartridge._container import Cartridge
from engram.cartridge._errors import (
    ActivationRefused,
    CartridgeTampered,
    ScrubBlocked,
    TrustRegistryError,
    UntrustedCartridge,
)
from engram.cartridge._format import APPLICATION_ID, USER_VERSION, Limits
from engram.cartridge._harness import (
    ROLES,
    Agreement,
    HostCapabilities,
    default_requirements,
    negotiate,
)
from engram.cartridge._manifest import BASELINE_ENGINE, PACKAGE_ROLES
from engram.cartridge._records import (
    FIELD_LEARNED,
    TRANSFERABLE,
    MergeResult,
    artifact_fingerprint,
    merge_records,
    prepare_for_export,
    validate_record,
)
from engram.cartridge._rom import Rom, load_rom
from engram.cartridge._scrub import Finding, scan
from engram.cartridge._transfer import ImportPlan, plan_import
from engram.cartridge._trust import TRUST_ORDER, TrustRegistry, TrustState, load_trust_registry
from engram.cartridge._verify import TrustReport, verify, verify_rom

__all__ = [
    "ACTIVATION_FILE",
    "APPLICATION_ID",
    "BASELINE_ENGINE",
    "DEFAULT_ACCEPT",
    "FIELD_LEARNED",
    "PACKAGE_ROLES",
    "ROLES",
    "TRANSFERABLE",
    "TRUST_ORDER",
    "USER_VERSION",
    "Activation",
    "ActivationRefused",
    "Agreement",
    "Cartridge",
    "CartridgeTampered",
    "Embed",
    "Finding",
    "HostCapabilities",
    "ImportPlan",
    "Limits",
    "MergeResult",
    "Rom",
    "ScrubBlocked",
    "SealResult",
    "TrustRegistry",
    "TrustRegistryError",
    "TrustReport",
    "TrustState",
    "UntrustedCartridge",
    "activate",
    "artifact_fingerprint",
    "build",
    "collect_skills",
    "default_requirements",
    "load_rom",
    "load_trust_registry",
    "merge_records",
    "negotiate",
    "plan_import",
    "prepare_for_export",
    "require_state",
    "scan",
    "seal",
    "strip",
    "validate_record",
    "verify",
    "verify_rom",
    "write_save",
]

"""engram.cartridge: Agent Cartridges (.acx) exactly as lboel/acx@85f1358 SPEC.md §3-§8 shapes them.

Our decisions are in docs/spec/acx.md. Read with :meth:`Cartridge.open` + :func:`verify` (a
:class:`TrustReport` in the §4.5 taxonomy of ``engram.trust``), see what a file holds with
:func:`load_rom`, :func:`derive_skills` and :func:`spec_report`; produce with
:func:`package_contents` + :func:`write`, :func:`strip` and :func:`upgrade`; use in a host with
:func:`activate`, :func:`check_host`, :func:`install_skills` and :func:`roster`.
"""

from engram.cartridge._agent import ExportOptions, package_contents
from engram.cartridge._build import Contents, strip, write, write_save
from engram.cartridge._container import Cartridge
from engram.cartridge._embed import embed
from engram.cartridge._errors import (
    ActivationRefused,
    CartridgeTampered,
    ScrubBlocked,
    UntrustedCartridge,
)
from engram.cartridge._format import Limits
from engram.cartridge._harness import Host, HostTool
from engram.cartridge._host import (
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
from engram.cartridge._host_descriptor import load_host_descriptor
from engram.cartridge._legacy import upgrade
from engram.cartridge._package import SpecReport, spec_report
from engram.cartridge._records import MergeResult, merge_records, record_problems
from engram.cartridge._rom import Rom, load_rom
from engram.cartridge._skills import Skill, derive_skills
from engram.cartridge._starter import write_starter_package
from engram.cartridge._verify import TrustReport, verify, verify_rom

__all__ = [
    "DEFAULT_ACCEPT",
    "HOST_SKILL_DIRS",
    "Activation",
    "ActivationRefused",
    "Cartridge",
    "CartridgeTampered",
    "Contents",
    "ExportOptions",
    "Host",
    "HostTool",
    "Limits",
    "MergeResult",
    "Rom",
    "RosterLine",
    "ScrubBlocked",
    "Skill",
    "SpecReport",
    "TrustReport",
    "UntrustedCartridge",
    "activate",
    "check_host",
    "derive_skills",
    "embed",
    "install_skills",
    "load_host_descriptor",
    "load_rom",
    "merge_records",
    "package_contents",
    "record_problems",
    "require_state",
    "roster",
    "spec_report",
    "strip",
    "upgrade",
    "verify",
    "verify_rom",
    "write",
    "write_save",
    "write_starter_package",
]

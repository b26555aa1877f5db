"""engram.cartridge: Agent Cartridges (.acx) exactly as lboel/acx@85f1358 SPEC.md §3-§8 shapes them.

Our decisions are in docs/spec/acx.md. Read with :meth:`Cartridge.open` + :func:`verify` (a
:class:`TrustReport` in the §4.5 taxonomy of ``engram.trust``), see what a file holds with
:func:`load_rom`, :func:`derive_skills` and :func:`spec_report`; produce with
:func:`package_contents` + :func:`write`, :func:`strip` and :func:`upgrade`; use in a host with
:func:`activate`, :func:`check_host`, :func:`install_skills` and :func:`roster`.
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

# Names bind on first use (engram.core.lazy): `engram cartridge load --help` reads HOST_SKILL_DIRS
# for its --host choices and must not pay for the signing path and cryptography (issue 28).
if TYPE_CHECKING:
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
        Activation,
        RosterLine,
        activate,
        check_host,
        install_skills,
        require_state,
        roster,
    )
    from engram.cartridge._host_descriptor import load_host_descriptor
    from engram.cartridge._host_dirs import HOST_SKILL_DIRS
    from engram.cartridge._legacy import upgrade
    from engram.cartridge._package import SpecReport, spec_report
    from engram.cartridge._records import MergeResult, merge_records
    from engram.cartridge._rom import Rom, load_rom
    from engram.cartridge._skills import Skill, derive_skills
    from engram.cartridge._starter import write_starter_package
    from engram.cartridge._verify import TrustReport, verify, verify_rom

_LAZY = {
    "ExportOptions": "engram.cartridge._agent",
    "package_contents": "engram.cartridge._agent",
    "Contents": "engram.cartridge._build",
    "strip": "engram.cartridge._build",
    "write": "engram.cartridge._build",
    "write_save": "engram.cartridge._build",
    "Cartridge": "engram.cartridge._container",
    "embed": "engram.cartridge._embed",
    "ActivationRefused": "engram.cartridge._errors",
    "CartridgeTampered": "engram.cartridge._errors",
    "ScrubBlocked": "engram.cartridge._errors",
    "UntrustedCartridge": "engram.cartridge._errors",
    "Limits": "engram.cartridge._format",
    "Host": "engram.cartridge._harness",
    "HostTool": "engram.cartridge._harness",
    "DEFAULT_ACCEPT": "engram.cartridge._host",
    "HOST_SKILL_DIRS": "engram.cartridge._host_dirs",
    "Activation": "engram.cartridge._host",
    "RosterLine": "engram.cartridge._host",
    "activate": "engram.cartridge._host",
    "check_host": "engram.cartridge._host",
    "install_skills": "engram.cartridge._host",
    "require_state": "engram.cartridge._host",
    "roster": "engram.cartridge._host",
    "load_host_descriptor": "engram.cartridge._host_descriptor",
    "upgrade": "engram.cartridge._legacy",
    "SpecReport": "engram.cartridge._package",
    "spec_report": "engram.cartridge._package",
    "MergeResult": "engram.cartridge._records",
    "merge_records": "engram.cartridge._records",
    "Rom": "engram.cartridge._rom",
    "load_rom": "engram.cartridge._rom",
    "Skill": "engram.cartridge._skills",
    "derive_skills": "engram.cartridge._skills",
    "write_starter_package": "engram.cartridge._starter",
    "TrustReport": "engram.cartridge._verify",
    "verify": "engram.cartridge._verify",
    "verify_rom": "engram.cartridge._verify",
}

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

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())

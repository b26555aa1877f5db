"""Local readiness: can this roster of cartridges staff a workflow and cover its tasks?

Spec: lboel/acx@85f1358 SPEC.md §14.2 (a ``hash`` participant is exactly the cartridge with that
signed ROM digest, never a substitute; a ``slot`` candidate satisfies every declared constraint -
role, independently proven ``minLevel``, capability ``taskType`` plus stack; several matches may
be ranked but the selection is exposed; ``required:false`` may stay unstaffed, every other
participant resolves), §14.3 ("``ready`` additionally staffs every required slot and checks
per-task skill/capability coverage"), §12 item 15 (a signed workflow is verified **before** any
slot is resolved), §14.4 (approval and side effects are declared, never granted);
docs/spec/acx-workflows.md §"Readiness".

Readiness is computed over :class:`CartridgeOffer` values - what one cartridge offers: who
published it, its ROM digest and trust state, the roles it plays, its skills, its capability
records and any level a verified credential proves - so it does not depend on how cartridges are
read (``_offer`` reads them). A tampered cartridge offers nothing. A level a cartridge merely
declares never satisfies ``minLevel``: only :attr:`CartridgeOffer.level`, which a reader fills
only from a resolved credential, does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engram.core.canonical import Json, JsonObject
from engram.trust import TrustState
from engram.workflow._issues import Accepted, LintReport
from engram.workflow._lint import lint_workflow
from engram.workflow._signature import Verification

CAREER_TIERS = (
    "intern",
    "junior",
    "mid",
    "senior",
    "staff",
    "principal",
    "distinguished",
    "legend",
)
_TRUST_RANK = {
    TrustState.LOCAL: 4,
    TrustState.TRUSTED: 3,
    TrustState.PORTABLE: 2,
    TrustState.LEGACY: 1,
}


@dataclass(frozen=True)
class Capability:
    """One capability record's ``taskType`` and the stack (purls) it was shown on."""

    task_type: str
    stack: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ProvenLevel:
    """A level an independently issued, verified credential proves (SPEC §10), never a claim."""

    acx_level: int
    career_tier: str | None = None


@dataclass(frozen=True)
class CartridgeOffer:
    """What one cartridge offers a workflow."""

    source: str
    publisher_id: str
    artifact_id: str
    artifact_version: str
    rom_digest: str
    trust: TrustState
    roles: frozenset[str] = frozenset()
    skills: frozenset[str] = frozenset()
    capabilities: tuple[Capability, ...] = ()
    level: ProvenLevel | None = None
    processes: frozenset[str] = frozenset()
    publisher_keyids: frozenset[str] = frozenset()
    """The key(s) the cartridge's ROM signature verified under: a level its own publisher's key
    issued is self-issued and never counts."""

    @property
    def task_types(self) -> frozenset[str]:
        return frozenset(c.task_type for c in self.capabilities)

    @property
    def label(self) -> str:
        return f"{self.publisher_id}/{self.artifact_id}@{self.artifact_version}"

    def to_wire(self) -> JsonObject:
        return {
            "source": self.source,
            "cartridge": self.label,
            "romDigest": self.rom_digest,
            "trust": self.trust.value,
            "roles": list[Json](sorted(self.roles)),
            "provenLevel": None
            if self.level is None
            else {"acxLevel": self.level.acx_level, "careerTier": self.level.career_tier},
        }


@dataclass(frozen=True)
class LevelOutcome:
    """What one credential proved: a level for one cartridge, or why it counts for none."""

    source: str
    cartridge: str | None
    level: ProvenLevel | None
    reason: str

    @property
    def counts(self) -> bool:
        return self.level is not None

    def to_wire(self) -> JsonObject:
        return {
            "credential": self.source,
            "cartridge": self.cartridge,
            "counts": self.counts,
            "provenLevel": None
            if self.level is None
            else {"acxLevel": self.level.acx_level, "careerTier": self.level.career_tier},
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Staffing:
    """How one participant was staffed: the selected cartridge (or none) and why."""

    alias: str
    bind: str
    required: bool
    selected: CartridgeOffer | None
    candidates: tuple[str, ...]
    reason: str

    def to_wire(self) -> JsonObject:
        return {
            "alias": self.alias,
            "bind": self.bind,
            "required": self.required,
            "selected": None if self.selected is None else self.selected.to_wire(),
            "candidates": list(self.candidates),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Gap:
    """A task whose bound cartridge lacks a required capability or skill."""

    node: str
    alias: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"task {self.node!r}: {self.alias!r} lacks {self.kind} {self.name!r}"


@dataclass(frozen=True)
class ReadyReport:
    """The readiness verdict and everything it rests on."""

    verification: Verification
    lint: LintReport
    staffing: tuple[Staffing, ...] = ()
    gaps: tuple[Gap, ...] = ()
    rac: tuple[JsonObject, ...] = ()
    approvals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()
    refused: str | None = None
    levels: tuple[LevelOutcome, ...] = ()
    """What each level credential given proved (``prove_levels``), counted or not."""

    @property
    def missing(self) -> tuple[str, ...]:
        """Each reason the workflow is not ready, one line each."""
        out = [] if self.refused is None else [self.refused]
        out += [f"{s.alias}: {s.reason}" for s in self.staffing if s.required and not s.selected]
        out += [str(g) for g in self.gaps]
        return tuple(out)

    @property
    def ready(self) -> bool:
        return not self.missing

    def to_wire(self) -> JsonObject:
        return {
            "ready": self.ready,
            "verification": self.verification.to_wire(),
            "lint": self.lint.to_wire(),
            "refused": self.refused,
            "staffing": [s.to_wire() for s in self.staffing],
            "gaps": [str(g) for g in self.gaps],
            "rac": list(self.rac),
            "approvals": list(self.approvals),
            "warnings": list(self.warnings),
            "unreadable": list(self.unreadable),
            "levels": [o.to_wire() for o in self.levels],
            "missing": list(self.missing),
        }


def ready(
    document: Accepted,
    offers: Iterable[CartridgeOffer],
    *,
    verification: Verification,
    unreadable: Sequence[str] = (),
    levels: Sequence[LevelOutcome] = (),
) -> ReadyReport:
    """Staff ``document`` from ``offers`` once its signature and structure have been checked.

    ``verification`` is the workflow's own signature verdict, taken before this call: a
    tampered workflow is refused here and no participant is resolved. ``levels`` are the
    outcomes of ``prove_levels`` (which filled the offers' proven levels), shown in the report.
    """
    lint = lint_workflow(document)
    base = {
        "verification": verification,
        "lint": lint,
        "unreadable": tuple(unreadable),
        "levels": tuple(levels),
    }
    if verification.tampered:
        reason = f"the workflow's signature is tampered ({verification.reason}); no slot resolved"
        return ReadyReport(**base, refused=reason)  # type: ignore[arg-type]
    if not lint.ok:
        reason = f"the workflow is not valid ({len(lint.errors)} lint error(s)); no slot resolved"
        return ReadyReport(**base, refused=reason)  # type: ignore[arg-type]
    usable = [o for o in offers if o.trust is not TrustState.TAMPERED]
    staffing = tuple(_staff(p, usable) for p in document["participants"])
    by_alias = {s.alias: s for s in staffing}
    gaps: list[Gap] = []
    warnings: list[str] = []
    if verification.state is None:
        warnings.append("the workflow is unsigned: its origin and integrity are unproven")
    for node in document["nodes"]:
        if node["type"] != "task":
            continue
        selected = by_alias[node["agent"]].selected
        if selected is None:
            if not by_alias[node["agent"]].required:
                warnings.append(
                    f"task {node['id']!r} is bound to the unstaffed optional participant "
                    f"{node['agent']!r}"
                )
            continue
        requires = node.get("requires", {})
        gaps += [
            Gap(node["id"], node["agent"], "capability", c)
            for c in requires.get("capabilities", [])
            if c not in selected.task_types
        ]
        gaps += [
            Gap(node["id"], node["agent"], "skill", s)
            for s in requires.get("skills", [])
            if s not in selected.skills
        ]
    return ReadyReport(
        **base,  # type: ignore[arg-type]
        staffing=staffing,
        gaps=tuple(gaps),
        rac=tuple(_rac_checklist(document)),
        approvals=tuple(_approvals(document)),
        warnings=tuple(warnings),
    )


def _staff(participant: Accepted, offers: list[CartridgeOffer]) -> Staffing:
    alias, bind = participant["alias"], participant["bind"]
    required = participant.get("required", True) is not False
    if bind == "hash":
        digest = participant["romDigest"]
        hits = _ranked(o for o in offers if o.rom_digest == digest)
        reason = (
            f"pinned by ROM digest {digest}"
            if hits
            else f"no verified cartridge has ROM digest {digest} (pinned: never substituted)"
        )
    else:
        slot = participant["slot"]
        hits = _ranked(o for o in offers if not _unmet(slot, o))
        reason = f"best of {len(hits)} matching cartridge(s)" if hits else _why_none(slot, offers)
    return Staffing(
        alias=alias,
        bind=bind,
        required=required,
        selected=hits[0] if hits else None,
        candidates=tuple(o.source for o in hits),
        reason=reason,
    )


def _ranked(offers: Iterable[CartridgeOffer]) -> list[CartridgeOffer]:
    """Proven level first, then trust, then source path: a deterministic choice."""
    return sorted(
        offers,
        key=lambda o: (-(o.level.acx_level if o.level else -1), -_TRUST_RANK[o.trust], o.source),
    )


def _unmet(slot: Accepted, offer: CartridgeOffer) -> list[str]:
    """Each constraint of ``slot`` that ``offer`` does not satisfy."""
    unmet: list[str] = []
    role = slot.get("role")
    if role is not None and role not in offer.roles:
        unmet.append(f"role {role!r}")
    level = slot.get("minLevel")
    if level is not None and not _meets_level(level, offer.level):
        unmet.append(f"a proven level of at least {_describe_level(level)}")
    for need in slot.get("capabilities", []):
        stack = frozenset(need.get("stack", []))
        if not any(
            c.task_type == need["taskType"] and stack <= c.stack for c in offer.capabilities
        ):
            shown = f" on {', '.join(sorted(stack))}" if stack else ""
            unmet.append(f"capability {need['taskType']!r}{shown}")
    return unmet


def _meets_level(level: Accepted, proven: ProvenLevel | None) -> bool:
    if proven is None:
        return False
    if "acxLevel" in level and proven.acx_level < level["acxLevel"]:
        return False
    if "careerTier" in level:
        if proven.career_tier not in CAREER_TIERS:
            return False
        return CAREER_TIERS.index(proven.career_tier) >= CAREER_TIERS.index(level["careerTier"])
    return True


def _describe_level(level: Accepted) -> str:
    parts = [f"acxLevel {level['acxLevel']}"] if "acxLevel" in level else []
    parts += [f"careerTier {level['careerTier']}"] if "careerTier" in level else []
    return " and ".join(parts)


def _why_none(slot: Accepted, offers: list[CartridgeOffer]) -> str:
    if not offers:
        return "no usable cartridge was found"
    unmet = [set(_unmet(slot, o)) for o in offers]
    nobody = sorted(set.intersection(*unmet))
    if nobody:
        text = "no cartridge offers " + "; ".join(nobody)
        if any("proven level" in n for n in nobody):
            text += " (a declared level never counts; a verified credential must prove it)"
        return text
    return "no single cartridge meets every constraint of the slot"


def _rac_checklist(document: Accepted) -> list[JsonObject]:
    return [
        {
            "id": item["id"],
            "kind": item["kind"],
            "required": item.get("required", True) is not False,
            "description": item["description"],
            "check": item.get("check"),
        }
        for item in document.get("rac", [])
    ]


def _approvals(document: Accepted) -> list[str]:
    out: list[str] = []
    for node in document["nodes"]:
        if node["type"] != "task":
            continue
        approval = node.get("approval", "on-request")
        effects = node.get("sideEffects", "workspace")
        if approval == "always":
            out.append(f"{node['id']}: the host must pause for explicit approval ({effects})")
        elif effects == "external":
            out.append(f"{node['id']}: external side effects, approval {approval}")
    return out


__all__ = [
    "CAREER_TIERS",
    "Capability",
    "CartridgeOffer",
    "Gap",
    "LevelOutcome",
    "ProvenLevel",
    "ReadyReport",
    "Staffing",
    "ready",
]

"""Field-learned rules: the SAVE overlay ``save/policy/rule-overlay.json``, never the ROM.

SPEC §9.1 (lboel/acx@85f1358): "Hosts MUST NOT mutate it at runtime; field-learned rule
additions MUST be written to a SAVE-zone overlay ``save/policy/rule-overlay.json``". The SPEC
does not define the overlay's shape and leaves "SAVE-zone rule-overlay vs ROM rules[]
precedence" open (§13); engram's answer (docs/spec/acx-policy.md §6):

- the file is ``{"schemaVersion": "engram.rule-overlay/1", "rules": [MissionRule, ...]}``, strict
  I-JSON, each rule the verbatim six-member MissionRule of §9.4;
- an overlay only adds: a rule whose id is already a ROM rule is refused (a field-learned rule
  cannot replace or soften a signed one), and so is a repeated id;
- the vendor-specifics rule applies to overlay rules as to the ROM's;
- :func:`add_rule` returns the overlay's new bytes for SAVE; it never sees the ROM bytes, so
  the ROM policy (and its ``oid`` in the signed manifest) cannot change.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

from jsonschema import Draft202012Validator

from engram.core.bounds import check_shape
from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.errors import CanonicalJsonError
from engram.policy._document import LoopContextPolicy, schema_for
from engram.policy._errors import PolicyError, Problem
from engram.policy._lint import Accepted, vendor_problems

OVERLAY_PATH = "save/policy/rule-overlay.json"
OVERLAY_VERSION = "engram.rule-overlay/1"
MAX_OVERLAY_BYTES = 1 << 20


def _overlay_schema() -> JsonObject:
    definitions = schema_for("acx.loop-context-policy/1.1")["$defs"]
    assert isinstance(definitions, dict)  # engram's own packaged schema
    rule = definitions["MissionRule"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["schemaVersion", "rules"],
        "additionalProperties": False,
        "properties": {
            "schemaVersion": {"const": OVERLAY_VERSION},
            "rules": {"type": "array", "items": rule},
        },
    }


_VALIDATOR = Draft202012Validator(_overlay_schema())


@dataclass(frozen=True)
class RuleOverlay:
    """The field-learned rules of one SAVE zone."""

    _rules: tuple[JsonObject, ...] = field(default=())

    @property
    def rules(self) -> list[JsonObject]:
        return copy.deepcopy(list(self._rules))

    def to_bytes(self) -> bytes:
        """The overlay's canonical bytes (RFC 8785), what SAVE stores."""
        return canonicalize({"schemaVersion": OVERLAY_VERSION, "rules": self.rules})


def load_rule_overlay(
    data: bytes, policy: LoopContextPolicy, *, what: str = OVERLAY_PATH
) -> RuleOverlay:
    """Parse and check an overlay against the ROM ``policy`` it extends."""
    if len(data) > MAX_OVERLAY_BYTES:
        raise PolicyError(
            what,
            [Problem("engram.policy.strict-json", "$", f"{len(data)} bytes > {MAX_OVERLAY_BYTES}")],
        )
    try:
        value: Json = parse_strict(bytes(data))
    except CanonicalJsonError as e:
        raise PolicyError(what, [Problem("engram.policy.strict-json", "$", e.message)]) from e
    if not isinstance(value, dict):
        raise PolicyError(what, [Problem("engram.policy.strict-json", "$", "not a JSON object")])
    check_shape(value, what)
    problems = [
        Problem("engram.policy.rule-overlay", e.json_path, e.message)
        for e in sorted(_VALIDATOR.iter_errors(value), key=lambda e: e.json_path)
    ]
    problems += vendor_problems(value)
    rules: list[Accepted] = []
    if not problems:
        listed = value["rules"]
        assert isinstance(listed, list)  # the overlay schema: an array of MissionRule objects
        rules = [rule for rule in listed if isinstance(rule, dict)]
        problems = _conflicts(rules, policy)
    if problems:
        raise PolicyError(what, problems)
    return RuleOverlay(tuple(rules))


def add_rule(
    overlay: RuleOverlay | None, rule: Mapping[str, Json], policy: LoopContextPolicy
) -> RuleOverlay:
    """The overlay with ``rule`` appended, checked exactly as a loaded overlay is."""
    rules: list[Json] = [*([] if overlay is None else overlay.rules), dict(rule)]
    document: JsonObject = {"schemaVersion": OVERLAY_VERSION, "rules": rules}
    return load_rule_overlay(canonicalize(document), policy, what="the new rule overlay")


def _conflicts(rules: list[Accepted], policy: LoopContextPolicy) -> list[Problem]:
    signed = {rule["id"] for rule in policy.get("rules") or []}
    problems = []
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        ident = rule["id"]
        if ident in signed:
            problems.append(
                Problem(
                    "engram.policy.rule-overlay",
                    f"$.rules[{index}].id",
                    f"rule {ident!r} is a signed ROM rule: an overlay adds rules,"
                    " never replaces one",
                )
            )
        elif ident in seen:
            problems.append(
                Problem("engram.policy.rule-overlay", f"$.rules[{index}].id", f"{ident!r} repeats")
            )
        seen.add(ident)
    return problems


__all__ = [
    "MAX_OVERLAY_BYTES",
    "OVERLAY_PATH",
    "OVERLAY_VERSION",
    "RuleOverlay",
    "add_rule",
    "load_rule_overlay",
]

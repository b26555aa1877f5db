"""engram.policy: the Agent Cartridge loop + context policy, evaluated as data (SPEC §9).

Spec: lboel/acx@85f1358 SPEC.md §9 and §12 item 12; engram's normative text is
docs/spec/acx-policy.md. Everything here takes bytes and plain values, so the ``.acx`` reader
only hands over the ROM object ``rom/policy/loop-context-policy.json`` (and the SAVE overlay):

- :func:`load_policy` parses (strict I-JSON) and validates ``acx.loop-context-policy/1`` and
  ``/1.1`` against engram's own schemas plus the semantic rules; any other version is refused;
- :func:`load_host_limits` reads a host ``resource-limits.yaml``; :func:`effective_limits` and
  :func:`effective_policy` resolve host > cartridge, with the provenance of each value;
- :func:`decide` is the pure evaluator (policy, limits, state, event) -> :class:`Decision`;
- :func:`load_rule_overlay` / :func:`add_rule` keep field-learned rules in SAVE.
"""

from engram.policy._document import (
    MEDIA_TYPE,
    POLICY_PATH,
    SCHEMA_VERSIONS,
    V1,
    V1_1,
    LoopContextPolicy,
    load_policy,
    schema_for,
    validate_policy_document,
)
from engram.policy._effective import EffectivePolicy, Entry, effective_policy
from engram.policy._errors import HostLimitsError, PolicyError, Problem
from engram.policy._evaluator import (
    DEFAULT_ACTIONS,
    CommandRequested,
    Completed,
    Decision,
    Event,
    GuardrailSignal,
    LoopState,
    NeedsInput,
    OperatorCommandReport,
    PhaseDone,
    PrReady,
    ReturnWindowReached,
    TurnEnded,
    VerificationResult,
    decide,
)
from engram.policy._limits import (
    HOST_LIMITS_FILE,
    EffectiveLimits,
    HostLimits,
    Limit,
    effective_limits,
    load_host_limits,
)
from engram.policy._lint import READ_ONLY_TOOLS, VERIFY_OMITTED_HINT
from engram.policy._overlay import (
    OVERLAY_PATH,
    OVERLAY_VERSION,
    RuleOverlay,
    add_rule,
    load_rule_overlay,
)

__all__ = [
    "DEFAULT_ACTIONS",
    "HOST_LIMITS_FILE",
    "MEDIA_TYPE",
    "OVERLAY_PATH",
    "OVERLAY_VERSION",
    "POLICY_PATH",
    "READ_ONLY_TOOLS",
    "SCHEMA_VERSIONS",
    "V1",
    "V1_1",
    "VERIFY_OMITTED_HINT",
    "CommandRequested",
    "Completed",
    "Decision",
    "EffectiveLimits",
    "EffectivePolicy",
    "Entry",
    "Event",
    "GuardrailSignal",
    "HostLimits",
    "HostLimitsError",
    "Limit",
    "LoopContextPolicy",
    "LoopState",
    "NeedsInput",
    "OperatorCommandReport",
    "PhaseDone",
    "PolicyError",
    "PrReady",
    "Problem",
    "ReturnWindowReached",
    "RuleOverlay",
    "TurnEnded",
    "VerificationResult",
    "add_rule",
    "decide",
    "effective_limits",
    "effective_policy",
    "load_host_limits",
    "load_policy",
    "load_rule_overlay",
    "schema_for",
    "validate_policy_document",
]

"""engram.workflow: ACX Workflows (``acx.cal/1``), Conditional Agentic Loops between cartridges.

Spec: lboel/acx@85f1358 SPEC.md §14 (team contract, graph and termination semantics, safety and
Required Available Context, the ``acx.workflow-signature/1`` digest and signature) and §17.3
(lineage); our decisions are in docs/spec/acx-workflows.md. Read with :func:`load_workflow`,
check portable validity with :func:`lint_workflow` (``publish=True`` for the publication
profile), sign with :func:`sign_workflow`, verify with :func:`verify_workflow` /
:func:`check_workflow`, and staff from a roster with :func:`ready` over :class:`CartridgeOffer`
values (:func:`find_cartridges` + :func:`read_cartridge_offer`), their levels proven by verified
credentials with :func:`prove_levels`. Nothing here executes a task;
:func:`evaluate_condition`, :func:`next_nodes` and :class:`StepBudget` give a host the closed
condition semantics and the ``maxSteps`` bound.

The shared spine of signed JSON ACX artifacts (:class:`ArtifactKind`, :func:`sign_document`,
:func:`verify_document`, the discovery profile and the secret scan) lives here too: an Agent
Graph is signed "with the same self-contained trust spine as workflows" (§16.8), so
``engram.graph`` builds on this package.
"""

from engram.workflow._conditions import (
    ConditionError,
    StepBudget,
    StepLimitReached,
    evaluate_condition,
    next_nodes,
)
from engram.workflow._document import DocumentError
from engram.workflow._issues import Issue, LintReport
from engram.workflow._lint import lint_workflow
from engram.workflow._offer import find_cartridges, read_cartridge_offer
from engram.workflow._ready import CartridgeOffer, ProvenLevel, ReadyReport, ready
from engram.workflow._ready_levels import prove_levels
from engram.workflow._signature import SignError, Verification
from engram.workflow._starter import starter_workflow
from engram.workflow._workflow import (
    check_workflow,
    load_workflow,
    sign_workflow,
    verify_workflow,
    workflow_digest,
)

__all__ = [
    "CartridgeOffer",
    "ConditionError",
    "DocumentError",
    "Issue",
    "LintReport",
    "ProvenLevel",
    "ReadyReport",
    "SignError",
    "StepBudget",
    "StepLimitReached",
    "Verification",
    "check_workflow",
    "evaluate_condition",
    "find_cartridges",
    "lint_workflow",
    "load_workflow",
    "next_nodes",
    "prove_levels",
    "read_cartridge_offer",
    "ready",
    "sign_workflow",
    "starter_workflow",
    "verify_workflow",
    "workflow_digest",
]

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
from engram.workflow._document import (
    MAX_DOCUMENT_BYTES,
    DocumentError,
    load_document,
    packaged_schema,
    schema_issues,
    unexpected_members,
)
from engram.workflow._issues import Issue, LintReport, duplicates, member_path
from engram.workflow._lint import TERMINAL_EVENTS, lint_workflow
from engram.workflow._offer import (
    OfferReader,
    find_cartridges,
    read_cartridge_offer,
    read_offers,
)
from engram.workflow._profile import (
    lineage_issues,
    metadata_issues,
    profile_issues,
    secret_issues,
    spdx_problem,
    uri_issues,
)
from engram.workflow._ready import (
    CAREER_TIERS,
    Capability,
    CartridgeOffer,
    Gap,
    LevelOutcome,
    ProvenLevel,
    ReadyReport,
    Staffing,
    ready,
)
from engram.workflow._ready_levels import LevelCredential, prove_levels
from engram.workflow._secrets import is_private_key_name, private_keys
from engram.workflow._signature import (
    PUBLISHER_ID,
    ArtifactCheck,
    ArtifactKind,
    Linter,
    SignError,
    Verification,
    check_document,
    document_digest,
    sign_document,
    sign_publishable,
    unsigned,
    verify_document,
)
from engram.workflow._starter import starter_workflow
from engram.workflow._workflow import (
    MEDIA_TYPE,
    PREDICATE_TYPE,
    SCHEMA_VERSION,
    SIGNATURE_VERSION,
    WORKFLOW,
    check_workflow,
    load_workflow,
    sign_workflow,
    verify_workflow,
    workflow_card,
    workflow_digest,
)

__all__ = [
    "CAREER_TIERS",
    "MAX_DOCUMENT_BYTES",
    "MEDIA_TYPE",
    "PREDICATE_TYPE",
    "PUBLISHER_ID",
    "SCHEMA_VERSION",
    "SIGNATURE_VERSION",
    "TERMINAL_EVENTS",
    "WORKFLOW",
    "ArtifactCheck",
    "ArtifactKind",
    "Capability",
    "CartridgeOffer",
    "ConditionError",
    "DocumentError",
    "Gap",
    "Issue",
    "LevelCredential",
    "LevelOutcome",
    "LintReport",
    "Linter",
    "OfferReader",
    "ProvenLevel",
    "ReadyReport",
    "SignError",
    "Staffing",
    "StepBudget",
    "StepLimitReached",
    "Verification",
    "check_document",
    "check_workflow",
    "document_digest",
    "duplicates",
    "evaluate_condition",
    "find_cartridges",
    "is_private_key_name",
    "lineage_issues",
    "lint_workflow",
    "load_document",
    "load_workflow",
    "member_path",
    "metadata_issues",
    "next_nodes",
    "packaged_schema",
    "private_keys",
    "profile_issues",
    "prove_levels",
    "read_cartridge_offer",
    "read_offers",
    "ready",
    "schema_issues",
    "secret_issues",
    "sign_document",
    "sign_publishable",
    "sign_workflow",
    "spdx_problem",
    "starter_workflow",
    "unexpected_members",
    "unsigned",
    "uri_issues",
    "verify_document",
    "verify_workflow",
    "workflow_card",
    "workflow_digest",
]

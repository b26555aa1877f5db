"""engram.context: the Engram context protocol's domain (spec: Engram v0.1 Conformance).

Subjects, beliefs (with tombstones), corrections that wait for the subject's confirmation, the
append-only evolution history, bearer tokens stored hashed, and the unsigned export and diff
documents a provider signs. Every function takes a :class:`~engram.store.Store` and, when it writes
or judges time, a :class:`~engram.core.clock.Clock`; nothing here reads the environment.
"""

from engram.context._beliefs import (
    add_belief,
    belief_history,
    create_subject,
    delete_belief,
    ensure_schema,
    erase_subject,
    get_belief,
    get_subject,
    list_beliefs,
    list_subjects,
)
from engram.context._cache import ContextCache
from engram.context._corrections import (
    confirm_correction,
    get_correction,
    list_corrections,
    list_pending_corrections,
    propose_correction,
    recent_decisions,
    reject_correction,
)
from engram.context._demo import DEMO_NAME, ensure_demo, seed_demo
from engram.context._export import (
    ENGRAM_VERSION,
    MAX_EXPORT_TTL,
    Issuer,
    build_diff,
    build_export,
    state_version,
)
from engram.context._injection import render_injection
from engram.context._model import (
    Belief,
    ChangeKind,
    Correction,
    CorrectionStatus,
    DemoSubject,
    EvolutionEntry,
    Permission,
    Subject,
    TokenGrant,
    TokenInfo,
)
from engram.context._registry import (
    CATEGORIES,
    DEFAULT_SCOPE,
    SCOPES,
    SENSITIVE_CATEGORIES,
    Scope,
    resolve_scope,
)
from engram.context._schema import CONTEXT_COMPONENT
from engram.context._tokens import (
    authenticate_cached,
    authenticate_token,
    authenticate_token_with_state,
    authorize,
    hash_token,
    issue_token,
    list_tokens,
    parse_permissions,
    require_permission,
    revoke_token,
)
from engram.context._validate import confidence as check_confidence

__all__ = [
    "CATEGORIES",
    "CONTEXT_COMPONENT",
    "DEFAULT_SCOPE",
    "DEMO_NAME",
    "ENGRAM_VERSION",
    "MAX_EXPORT_TTL",
    "SCOPES",
    "SENSITIVE_CATEGORIES",
    "Belief",
    "ChangeKind",
    "ContextCache",
    "Correction",
    "CorrectionStatus",
    "DemoSubject",
    "EvolutionEntry",
    "Issuer",
    "Permission",
    "Scope",
    "Subject",
    "TokenGrant",
    "TokenInfo",
    "add_belief",
    "authenticate_cached",
    "authenticate_token",
    "authenticate_token_with_state",
    "authorize",
    "belief_history",
    "build_diff",
    "build_export",
    "check_confidence",
    "confirm_correction",
    "create_subject",
    "delete_belief",
    "ensure_demo",
    "ensure_schema",
    "erase_subject",
    "get_belief",
    "get_correction",
    "get_subject",
    "hash_token",
    "issue_token",
    "list_beliefs",
    "list_corrections",
    "list_pending_corrections",
    "list_subjects",
    "list_tokens",
    "parse_permissions",
    "propose_correction",
    "recent_decisions",
    "reject_correction",
    "render_injection",
    "require_permission",
    "resolve_scope",
    "revoke_token",
    "seed_demo",
    "state_version",
]

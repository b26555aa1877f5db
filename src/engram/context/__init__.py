"""engram.context: the Engram context protocol's domain (spec: Engram v0.1 Conformance).

Subjects, beliefs (with tombstones), corrections that wait for the subject's confirmation, the
append-only evolution history, bearer tokens stored hashed, and the unsigned export and diff
documents a provider signs. Every function takes a :class:`~engram.store.Store` and, when it writes
or judges time, a :class:`~engram.core.clock.Clock`; nothing here reads the environment.
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.context._beliefs import (
        add_belief,
        belief_history,
        create_subject,
        delete_belief,
        erase_subject,
        get_belief,
        get_subject,
        list_beliefs,
        list_subjects,
    )
    from engram.context._cache import (
        ContextCache,
    )
    from engram.context._corrections import (
        confirm_correction,
        get_correction,
        list_corrections,
        list_pending_corrections,
        propose_correction,
        recent_decisions,
        reject_correction,
    )
    from engram.context._demo import (
        DEMO_NAME,
        ensure_demo,
        seed_demo,
    )
    from engram.context._export import (
        ENGRAM_VERSION,
        MAX_EXPORT_TTL,
        Issuer,
        build_diff,
        build_export,
        state_version,
    )
    from engram.context._injection import (
        render_injection,
    )
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
    from engram.context._schema import (
        CONTEXT_COMPONENT,
        ensure_schema,
    )
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
    from engram.context._validate import check_confidence

# Imported on first use (PEP 562): every CLI command opens its store through ensure_schema,
# and memory commands need none of the rest (exports, tokens, corrections, the demo; issue 16,
# cold CLI start).
_LAZY: dict[str, str] = {
    "add_belief": "engram.context._beliefs",
    "belief_history": "engram.context._beliefs",
    "check_confidence": "engram.context._validate",
    "create_subject": "engram.context._beliefs",
    "delete_belief": "engram.context._beliefs",
    "ensure_schema": "engram.context._schema",
    "erase_subject": "engram.context._beliefs",
    "get_belief": "engram.context._beliefs",
    "get_subject": "engram.context._beliefs",
    "list_beliefs": "engram.context._beliefs",
    "list_subjects": "engram.context._beliefs",
    "ContextCache": "engram.context._cache",
    "confirm_correction": "engram.context._corrections",
    "get_correction": "engram.context._corrections",
    "list_corrections": "engram.context._corrections",
    "list_pending_corrections": "engram.context._corrections",
    "propose_correction": "engram.context._corrections",
    "recent_decisions": "engram.context._corrections",
    "reject_correction": "engram.context._corrections",
    "DEMO_NAME": "engram.context._demo",
    "ensure_demo": "engram.context._demo",
    "seed_demo": "engram.context._demo",
    "ENGRAM_VERSION": "engram.context._export",
    "MAX_EXPORT_TTL": "engram.context._export",
    "Issuer": "engram.context._export",
    "build_diff": "engram.context._export",
    "build_export": "engram.context._export",
    "state_version": "engram.context._export",
    "render_injection": "engram.context._injection",
    "Belief": "engram.context._model",
    "ChangeKind": "engram.context._model",
    "Correction": "engram.context._model",
    "CorrectionStatus": "engram.context._model",
    "DemoSubject": "engram.context._model",
    "EvolutionEntry": "engram.context._model",
    "Permission": "engram.context._model",
    "Subject": "engram.context._model",
    "TokenGrant": "engram.context._model",
    "TokenInfo": "engram.context._model",
    "CATEGORIES": "engram.context._registry",
    "DEFAULT_SCOPE": "engram.context._registry",
    "SCOPES": "engram.context._registry",
    "SENSITIVE_CATEGORIES": "engram.context._registry",
    "Scope": "engram.context._registry",
    "resolve_scope": "engram.context._registry",
    "CONTEXT_COMPONENT": "engram.context._schema",
    "authenticate_cached": "engram.context._tokens",
    "authenticate_token": "engram.context._tokens",
    "authenticate_token_with_state": "engram.context._tokens",
    "authorize": "engram.context._tokens",
    "hash_token": "engram.context._tokens",
    "issue_token": "engram.context._tokens",
    "list_tokens": "engram.context._tokens",
    "parse_permissions": "engram.context._tokens",
    "require_permission": "engram.context._tokens",
    "revoke_token": "engram.context._tokens",
}


if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())


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

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
    from engram.context._corrections import (
        confirm_correction,
        get_correction,
        list_corrections,
        list_pending_corrections,
        propose_correction,
        reject_correction,
    )
    from engram.context._export import Issuer, build_export
    from engram.context._model import (
        Belief,
        ChangeKind,
        Correction,
        CorrectionStatus,
        EvolutionEntry,
        Permission,
        Subject,
        TokenInfo,
    )
    from engram.context._registry import CATEGORIES, SENSITIVE_CATEGORIES
    from engram.context._schema import ensure_schema
    from engram.context._tokens import authenticate_token, issue_token, list_tokens, revoke_token

# Imported on first use (PEP 562): every CLI command opens its store through ensure_schema,
# and memory commands need none of the rest (exports, tokens, corrections, the demo; issue 16,
# cold CLI start).
_LAZY: dict[str, str] = {
    "add_belief": "engram.context._beliefs",
    "belief_history": "engram.context._beliefs",
    "create_subject": "engram.context._beliefs",
    "delete_belief": "engram.context._beliefs",
    "ensure_schema": "engram.context._schema",
    "erase_subject": "engram.context._beliefs",
    "get_belief": "engram.context._beliefs",
    "get_subject": "engram.context._beliefs",
    "list_beliefs": "engram.context._beliefs",
    "list_subjects": "engram.context._beliefs",
    "confirm_correction": "engram.context._corrections",
    "get_correction": "engram.context._corrections",
    "list_corrections": "engram.context._corrections",
    "list_pending_corrections": "engram.context._corrections",
    "propose_correction": "engram.context._corrections",
    "reject_correction": "engram.context._corrections",
    "Issuer": "engram.context._export",
    "build_export": "engram.context._export",
    "Belief": "engram.context._model",
    "ChangeKind": "engram.context._model",
    "Correction": "engram.context._model",
    "CorrectionStatus": "engram.context._model",
    "EvolutionEntry": "engram.context._model",
    "Permission": "engram.context._model",
    "Subject": "engram.context._model",
    "TokenInfo": "engram.context._model",
    "CATEGORIES": "engram.context._registry",
    "SENSITIVE_CATEGORIES": "engram.context._registry",
    "authenticate_token": "engram.context._tokens",
    "issue_token": "engram.context._tokens",
    "list_tokens": "engram.context._tokens",
    "revoke_token": "engram.context._tokens",
}


if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "CATEGORIES",
    "SENSITIVE_CATEGORIES",
    "Belief",
    "ChangeKind",
    "Correction",
    "CorrectionStatus",
    "EvolutionEntry",
    "Issuer",
    "Permission",
    "Subject",
    "TokenInfo",
    "add_belief",
    "authenticate_token",
    "belief_history",
    "build_export",
    "confirm_correction",
    "create_subject",
    "delete_belief",
    "ensure_schema",
    "erase_subject",
    "get_belief",
    "get_correction",
    "get_subject",
    "issue_token",
    "list_beliefs",
    "list_corrections",
    "list_pending_corrections",
    "list_subjects",
    "list_tokens",
    "propose_correction",
    "reject_correction",
    "revoke_token",
]

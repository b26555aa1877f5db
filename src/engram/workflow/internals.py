"""engram.workflow's names for other engram packages, benchmarks and tests: not public API.

The signed-ACX-artifact spine that ``engram.graph`` and ``engram.registry`` build on (artifact
kinds, document loading, digests, signing and verification, the discovery profile's checks, the
secret scan), and the credential and offer plumbing of readiness.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.workflow`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.workflow._document import (
        MAX_DOCUMENT_BYTES,
        load_document,
        packaged_schema,
        schema_issues,
        unexpected_members,
    )
    from engram.workflow._issues import duplicates, member_path
    from engram.workflow._offer import read_offers
    from engram.workflow._profile import lineage_issues, profile_issues
    from engram.workflow._ready import Capability, LevelOutcome
    from engram.workflow._ready_levels import LevelCredential
    from engram.workflow._secrets import is_private_key_name
    from engram.workflow._signature import (
        PUBLISHER_ID,
        ArtifactCheck,
        ArtifactKind,
        check_document,
        document_digest,
        sign_document,
        sign_publishable,
        unsigned,
        verify_document,
    )
    from engram.workflow._workflow import WORKFLOW, workflow_card

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "MAX_DOCUMENT_BYTES": "engram.workflow._document",
    "load_document": "engram.workflow._document",
    "packaged_schema": "engram.workflow._document",
    "schema_issues": "engram.workflow._document",
    "unexpected_members": "engram.workflow._document",
    "duplicates": "engram.workflow._issues",
    "member_path": "engram.workflow._issues",
    "read_offers": "engram.workflow._offer",
    "lineage_issues": "engram.workflow._profile",
    "profile_issues": "engram.workflow._profile",
    "Capability": "engram.workflow._ready",
    "LevelOutcome": "engram.workflow._ready",
    "LevelCredential": "engram.workflow._ready_levels",
    "is_private_key_name": "engram.workflow._secrets",
    "ArtifactCheck": "engram.workflow._signature",
    "ArtifactKind": "engram.workflow._signature",
    "PUBLISHER_ID": "engram.workflow._signature",
    "check_document": "engram.workflow._signature",
    "document_digest": "engram.workflow._signature",
    "sign_document": "engram.workflow._signature",
    "sign_publishable": "engram.workflow._signature",
    "unsigned": "engram.workflow._signature",
    "verify_document": "engram.workflow._signature",
    "WORKFLOW": "engram.workflow._workflow",
    "workflow_card": "engram.workflow._workflow",
}

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "PUBLISHER_ID",
    "WORKFLOW",
    "ArtifactCheck",
    "ArtifactKind",
    "Capability",
    "LevelCredential",
    "LevelOutcome",
    "check_document",
    "document_digest",
    "duplicates",
    "is_private_key_name",
    "lineage_issues",
    "load_document",
    "member_path",
    "packaged_schema",
    "profile_issues",
    "read_offers",
    "schema_issues",
    "sign_document",
    "sign_publishable",
    "unexpected_members",
    "unsigned",
    "verify_document",
    "workflow_card",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())

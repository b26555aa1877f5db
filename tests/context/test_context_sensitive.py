"""One source for the sensitive categories (issue 28): the scopes that serve beliefs
(``engram.context``) and the wire reading that a conformance probe and the runtime apply to any
provider's export (``engram.core.context_wire.is_sensitive``) withhold the same categories."""

from __future__ import annotations

import pytest

from engram.context import CATEGORIES, SENSITIVE_CATEGORIES
from engram.context.internals import SCOPES
from engram.core import context_wire


@pytest.mark.req("engram.context.sensitive-one-source")
def test_the_scopes_and_the_wire_withhold_the_same_categories() -> None:
    assert SENSITIVE_CATEGORIES is context_wire.SENSITIVE_CATEGORIES
    assert SENSITIVE_CATEGORIES
    assert set(CATEGORIES) >= SENSITIVE_CATEGORIES
    for category in CATEGORIES:
        sensitive = context_wire.is_sensitive({"category": category})
        assert SCOPES["professional"].admits(category) is not sensitive, category
        assert SCOPES["full"].admits(category)

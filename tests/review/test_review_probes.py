"""Conformance probes on the review page (issue 12, "Conformance runner"): corrections the
conformance runner sent to test the provider are shown in a section of their own, labelled,
never counted among the proposals about the subject (docs/spec/review-page.md, "Probes")."""

from __future__ import annotations

import pytest
from review_kit import ReviewKit

from engram.core.context_wire import PROBE_LABEL, PROBE_RUNTIME_ID


@pytest.mark.req("engram.review.probes-apart")
async def test_probes_are_shown_apart_from_real_proposals(kit: ReviewKit) -> None:
    real = kit.propose("Lives in Leeds and walks to work.", runtime="assistant-7")
    probe = kit.propose(f"{PROBE_LABEL} ecp-0123: an automated test", runtime=PROBE_RUNTIME_ID)
    by_text = kit.propose(f"{PROBE_LABEL} ecp-4567: sent by another tool", runtime="ci-bot")
    await kit.sign_in()

    page = await kit.home()

    waiting = page[page.index('id="pending"') : page.index('id="beliefs"')]
    probes = page[page.index('id="probes"') :]
    assert "1 proposed correction waits for your decision." in page
    assert f'id="correction-{real.id}"' in waiting
    for labelled in (probe, by_text):
        assert f'id="correction-{labelled.id}"' not in waiting
        card = probes[probes.index(f'id="correction-{labelled.id}"') :]
        card = card[: card.index("</article>")]
        assert "conformance probe" in card
        assert "/reject" in card
    assert "They say nothing about you" in probes


@pytest.mark.req("engram.review.probes-apart")
async def test_without_probes_there_is_no_probe_section(kit: ReviewKit) -> None:
    kit.propose("Lives in Leeds.", runtime="assistant-7")
    await kit.sign_in()
    assert 'id="probes"' not in await kit.home()

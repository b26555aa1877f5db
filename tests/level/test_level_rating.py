"""The reference's Proof 3, reproduced with engram's benchmark generator and rating (§10.2)."""

from __future__ import annotations

import pytest
from level_kit import PROOF3_ROM

from engram.level import ReferenceSolver, demo_benchmark
from engram.level.internals import Game, Gate, career_tier, level_for, rate


def _proof3(competence: float, draw: int) -> tuple[float, float, float, int, int, bool, int, str]:
    benchmark = demo_benchmark()
    solver = ReferenceSolver(competence)
    games = [
        Game(task.difficulty, solver.solve(PROOF3_ROM, task).passed)
        for task in benchmark.draw(PROOF3_ROM, draw)
    ]
    rating = rate(games)
    level = level_for(rating.conservative)
    issued = not Gate().failures(rating.sigma, rating.games)
    return (
        rating.mu,
        rating.sigma,
        rating.conservative,
        rating.games,
        rating.wins,
        issued,
        level,
        career_tier(level),
    )


@pytest.mark.req("engram.level.trueskill-gate", "engram.level.benchmark")
def test_proof_3_weak_agent_is_not_issued() -> None:
    mu, sigma, r, games, _, issued, _, tier = _proof3(14, 50)
    # transcript: "sigma=2.230 (<1.5?), games=50 (>=30?) | R=5.80 tier=junior"
    assert (f"{sigma:.3f}", f"{r:.2f}", games, issued, tier) == (
        "2.230",
        "5.80",
        50,
        False,
        "junior",
    )
    assert f"{mu:.2f}" == "12.49"


@pytest.mark.req("engram.level.trueskill-gate", "engram.level.benchmark")
def test_proof_3_strong_agent_is_principal() -> None:
    mu, sigma, r, games, wins, issued, level, tier = _proof3(33, 90)
    # transcript: "mu=33.03 sigma=1.232 games=90 passRate=60% R=29.34 => acxLevel=29 tier=principal"
    assert (f"{mu:.2f}", f"{sigma:.3f}", games, f"{100 * wins / games:.0f}", f"{r:.2f}") == (
        "33.03",
        "1.232",
        90,
        "60",
        "29.34",
    )
    assert (issued, level, tier) == (True, 29, "principal")


@pytest.mark.req("engram.level.benchmark")
def test_the_demo_benchmark_has_the_references_published_digests() -> None:
    benchmark = demo_benchmark()
    assert len(benchmark.tasks) == 160
    assert len(benchmark.held_out) == 96
    assert (
        benchmark.digest
        == "sha256:019fc517108a721b9bfc83e9a8d61c5011c29894c43a361c35fdacb2c783e900"
    )
    assert benchmark.held_out_slice_digest == (
        "sha256:d16bf83a37c399775bd88ab3b3a7d889eef3058cbf1196bb283b9c3d26d4507b"
    )


@pytest.mark.req("engram.level.level-rounding")
@pytest.mark.parametrize(
    ("r", "level"), [(4.5, 5), (5.5, 6), (28.5, 29), (29.34, 29), (4.4999, 4), (-3.0, 0), (0.5, 1)]
)
def test_the_level_rounds_half_up_as_javascript_does(r: float, level: int) -> None:
    assert level_for(r) == level
    if r in (4.5, 28.5):
        assert round(r) != level  # Python rounds half to even: the pitfall


@pytest.mark.req("engram.level.level-rounding")
@pytest.mark.parametrize(
    ("level", "tier"),
    [
        (0, "intern"),
        (4, "intern"),
        (5, "junior"),
        (10, "mid"),
        (15, "senior"),
        (20, "staff"),
        (25, "principal"),
        (29, "principal"),
        (30, "distinguished"),
        (35, "legend"),
        (50, "legend"),
    ],
)
def test_career_tiers(level: int, tier: str) -> None:
    assert career_tier(level) == tier


@pytest.mark.req("engram.level.trueskill-gate")
def test_one_lucky_win_cannot_level_up_and_the_gate_needs_both_conditions() -> None:
    one = rate([Game(45, True)])
    assert Gate().failures(one.sigma, one.games)
    assert Gate().failures(1.4, 29) == ["gamesPlayed 29 < 30"]
    assert Gate().failures(1.5, 30) == ["sigma 1.500 is not < 1.5"]
    assert Gate().failures(1.499, 30) == []

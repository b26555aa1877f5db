"""TrueSkill rating, the σ/N gate, R = μ − 3σ, level and career tier (SPEC §10.2 steps 3-4).

Every graded task is a 1-vs-1 game (no draws) against a fixed "task opponent" whose skill is the
task's difficulty. The ``trueskill`` library does the update in an explicit environment, never
its module-level globals: μ₀ = 25, σ₀ = 25/3, β = 25/6, τ = 25/300, draw probability 0, as the
reference's ``src/level/trueskill.mjs`` (lboel/acx@85f1358).

The opponent is fixed: its σ is 0.5 *when the game is played*. The library adds τ to every
rating before a game (the dynamics factor), the opponent's included, so the opponent is handed to
it as σ = √(0.25 − τ²), which the library widens back to exactly 0.5. Without that, the weak
agent of the reference's Proof 3 ends at σ 2.2305 (printed 2.231), not its 2.230.

The level is R rounded half *up*, never below 0, as JavaScript's ``Math.round`` does: Python's
``round`` rounds half to even (``round(4.5) == 4``), so it is ``floor(R + 0.5)`` here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import trueskill

MU0 = 25.0
SIGMA0 = 25.0 / 3.0
BETA = 25.0 / 6.0
TAU = 25.0 / 300.0
OPPONENT_SIGMA = 0.5
SIGMA_MAX = 1.5
MIN_GAMES = 30

CAREER_TIERS: tuple[tuple[int, str], ...] = (
    (35, "legend"),
    (30, "distinguished"),
    (25, "principal"),
    (20, "staff"),
    (15, "senior"),
    (10, "mid"),
    (5, "junior"),
    (0, "intern"),
)
TIERS = tuple(name for _, name in reversed(CAREER_TIERS))
"""The eight CareerTier values, lowest first."""


def environment() -> trueskill.TrueSkill:
    """The explicit TrueSkill environment of the level protocol."""
    return trueskill.TrueSkill(mu=MU0, sigma=SIGMA0, beta=BETA, tau=TAU, draw_probability=0.0)


@dataclass(frozen=True)
class Game:
    """One graded task: its difficulty (the opponent's μ) and whether the agent passed."""

    difficulty: float
    passed: bool


@dataclass(frozen=True)
class Rating:
    mu: float
    sigma: float
    games: int
    wins: int

    @property
    def conservative(self) -> float:
        """R = μ − 3σ."""
        return self.mu - 3.0 * self.sigma

    @property
    def pass_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0


def rate(games: Iterable[Game]) -> Rating:
    """The agent's rating after ``games``, in order, from the prior (μ₀, σ₀)."""
    env = environment()
    agent = env.create_rating()
    opponent_sigma = math.sqrt(OPPONENT_SIGMA**2 - TAU**2)
    played = wins = 0
    for game in games:
        opponent = env.create_rating(mu=float(game.difficulty), sigma=opponent_sigma)
        if game.passed:
            (agent,), _ = env.rate([(agent,), (opponent,)], ranks=[0, 1])
            wins += 1
        else:
            _, (agent,) = env.rate([(opponent,), (agent,)], ranks=[0, 1])
        played += 1
    return Rating(mu=agent.mu, sigma=agent.sigma, games=played, wins=wins)


def level_for(conservative: float) -> int:
    """``acxLevel``: R rounded half up (JavaScript ``Math.round``), never below 0."""
    return max(0, math.floor(conservative + 0.5))


def career_tier(level: int) -> str:
    """``careerTierForLevel``: intern <5 ≤ junior <10 ≤ mid … ≤ legend (35+)."""
    for floor, name in CAREER_TIERS:
        if level >= floor:
            return name
    return "intern"


@dataclass(frozen=True)
class Gate:
    """The issuance gate of §10.2 step 3: σ < σ_max and games ≥ N_min, both."""

    sigma_max: float = SIGMA_MAX
    min_games: int = MIN_GAMES

    def failures(self, sigma: float, games: int) -> list[str]:
        out = []
        if not sigma < self.sigma_max:
            out.append(f"sigma {sigma:.3f} is not < {self.sigma_max}")
        if games < self.min_games:
            out.append(f"gamesPlayed {games} < {self.min_games}")
        return out


__all__ = [
    "BETA",
    "CAREER_TIERS",
    "MIN_GAMES",
    "MU0",
    "SIGMA0",
    "SIGMA_MAX",
    "TAU",
    "TIERS",
    "Game",
    "Gate",
    "Rating",
    "career_tier",
    "environment",
    "level_for",
    "rate",
]

"""Statistics over tournament games: confidence intervals of mean and win rate, and
OpenSkill ratings (see `agents.evaluation.games` for why intervals are over deal groups)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from agents.evaluation.games import GameRecords

# Student-t 97.5% quantiles for 1..30 degrees of freedom (two-sided 95% interval).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """Two-sided 95% Student-t critical value for ``df`` >= 1 degrees of freedom.

    Exact table values up to 30; beyond, the Cornish-Fisher expansion (error < 1e-4).
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def mean_confidence_interval(samples: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval of independent samples.

    Args:
        samples: float (n,), n >= 1.

    Returns:
        ``(mean, low, high)``; with one sample the interval is ``(-inf, inf)``.
    """
    samples = np.asarray(samples, dtype=np.float64)
    mean = float(samples.mean())
    if samples.size < 2:
        return mean, -math.inf, math.inf
    half = t_quantile_975(samples.size - 1) * float(samples.std(ddof=1)) / math.sqrt(samples.size)
    return mean, mean - half, mean + half


def win_rate_interval(per_deal_shares: np.ndarray) -> tuple[float, float, float]:
    """Win rate and its 95% interval from per-deal-group mean win shares.

    Args:
        per_deal_shares: float (D,), each in [0, 1]: one agent's mean win share over the
            rotations of one deal group.

    Returns:
        ``(win_rate, low, high)``: the Student-t interval over the D means, clipped to
        [0, 1]; the Wilson score interval with D trials when the spread is zero or D < 2.
    """
    shares = np.asarray(per_deal_shares, dtype=np.float64)
    rate, low, high = mean_confidence_interval(shares)
    if shares.size < 2 or float(shares.std()) == 0.0:
        low, high = wilson_interval(rate, shares.size)
    return rate, max(0.0, low), min(1.0, high)


def wilson_interval(rate: float, trials: int) -> tuple[float, float]:
    """95% Wilson score interval of a success fraction ``rate`` over ``trials`` trials."""
    z2 = _Z975**2
    center = (rate + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z975 * math.sqrt(rate * (1 - rate) / trials + z2 / (4 * trials**2)) / (1 + z2 / trials)
    return max(0.0, center - half), min(1.0, center + half)


def openskill_ratings(records: GameRecords, names: Sequence[str]) -> list[tuple[float, float, float]]:
    """OpenSkill Plackett-Luce ratings from the games, fed one by one in game order.

    Each game ranks the agents by final total (lowest first; equal totals tie).

    Args:
        records: The games.
        names: One name per agent position.

    Returns:
        ``(mu, sigma, ordinal)`` per agent position (ordinal = mu - 3 sigma).
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating(name=name) for name in names]
    totals = records.total
    # rank = 1 + number of strictly lower totals: ties share a rank
    ranks = 1 + (totals[:, None, :] < totals[:, :, None]).sum(axis=2)
    for g in range(records.num_games):
        teams = model.rate([[rating] for rating in ratings], ranks=ranks[g].tolist())
        ratings = [team[0] for team in teams]
    return [(float(r.mu), float(r.sigma), float(r.ordinal())) for r in ratings]

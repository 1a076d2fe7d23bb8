"""Statistics over tournament games: confidence intervals of mean and win rate, and
OpenSkill ratings (see `agents.evaluation.games` for why intervals are over deal groups)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.stats

from agents.evaluation.games import GameRecords

#: Two-sided 95% intervals use the 97.5% quantile.
_UPPER = 0.975
_Z975 = float(scipy.stats.norm.ppf(_UPPER))


def t_quantile_975(df: int) -> float:
    """Two-sided 95% Student-t critical value for ``df`` >= 1 degrees of freedom.

    Raises:
        ValueError: ``df`` < 1.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return float(scipy.stats.t.ppf(_UPPER, df))


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
            games (seat rotations or orders) of one deal group.

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
    """95% Wilson score interval of a success fraction ``rate`` over ``trials`` trials.

    The formula is written out rather than taken from ``scipy.stats.binomtest``, which
    needs a whole number of successes: here ``rate * trials`` may be fractional (a deal
    group's mean win share, e.g. 0.5 for a deal whose rotations split the wins). For whole
    numbers of successes it equals ``binomtest(k, trials).proportion_ci("wilson")``.

    Raises:
        ValueError: ``trials`` < 1 or ``rate`` outside [0, 1].
    """
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not -1e-9 <= rate <= 1 + 1e-9:  # a mean of shares may round an ulp past [0, 1]
        raise ValueError(f"rate must be in [0, 1], got {rate}")
    rate = min(1.0, max(0.0, rate))
    z2 = _Z975**2
    center = (rate + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z975 * math.sqrt(rate * (1 - rate) / trials + z2 / (4 * trials**2)) / (1 + z2 / trials)
    # at rate 0 (or 1) the bound is exactly 0 (or 1); the subtraction leaves an ulp or so
    low = 0.0 if rate == 0.0 else max(0.0, center - half)
    high = 1.0 if rate == 1.0 else min(1.0, center + half)
    return low, high


def openskill_ratings(records: GameRecords, names: Sequence[str]) -> list[tuple[float, float, float]]:
    """OpenSkill Plackett-Luce ratings from the games, fed one by one in game order.

    Each game ranks the agents by final total (lowest first; equal totals tie). A game
    truncated by the turn cap has no result and is skipped.

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
    for g in np.flatnonzero(~records.truncated):
        teams = model.rate([[rating] for rating in ratings], ranks=ranks[g].tolist())
        ratings = [team[0] for team in teams]
    return [(float(r.mu), float(r.sigma), float(r.ordinal())) for r in ratings]

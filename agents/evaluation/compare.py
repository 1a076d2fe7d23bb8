"""Paired comparisons: two settings of an agent judged on the same deals.

Two networks' (or two search settings') win rates over different games differ by a few
points from luck alone; over the same deals much of that luck is shared, so the per-deal
difference of the two win rates has a far narrower interval than the two intervals
suggest. Two ways to get such pairs:

- `paired_runs`: two (or more) ``evaluate.py`` runs already played with the same ``--seed`` and
  player count (a run of fewer games plays a prefix of a longer run's deals), read from the
  per-game files both wrote with ``--games-csv`` or from their ``--resume`` directories
  (the chunks finished so far: two long runs can be paired before they end); compared
  over the deal groups both played in full.
- `network_deal_shares`: play each network (``ppo:PATH``) against ``ev`` in every other
  seat on the same games (same seed: the same deals, seats rotated).

`interval_text` formats a win rate or a paired difference with its 95% interval; the
command line is ``skyjo-compare`` (`agents.cli.compare`).

Agents that draw random numbers of their own (a search, a sampling policy) play other
games in each run even on the same deal; the pairing removes the deal's luck, not theirs.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from agents.evaluation.resume import ResumeError, read_finished_chunks
from agents.evaluation.statistics import mean_confidence_interval, win_rate_interval
from skyjo_env.core.errors import first_line, shorten

#: Columns every ``--games-csv`` file has (`agents.evaluation.report.render_games_csv`).
GAMES_CSV_COLUMNS = frozenset({"seed", "deal", "rotation", "agent_0_win_share"})


class PairingError(ValueError):
    """Two runs that cannot be paired, or a file that is not a ``--games-csv`` file."""


def read_games_csv(path: str | Path) -> dict[str, np.ndarray]:
    """The columns of a ``--games-csv`` file (`agents.evaluation.report.render_games_csv`).

    Args:
        path: The file.

    Returns:
        Column name -> float64 (G,), one entry per game.

    Raises:
        PairingError: An unreadable file, one without the games-CSV columns, no games, or
            rows of other lengths than the header.
    """
    try:
        with open(path, encoding="utf-8") as file:
            header = file.readline().strip().split(",")
            if not GAMES_CSV_COLUMNS <= set(header):
                raise PairingError(f"{path}: not a --games-csv file of evaluate.py (its first "
                                   "line lacks the columns seed, deal, rotation, "
                                   "agent_0_win_share)")
            with warnings.catch_warnings():  # an empty body is reported below, once
                warnings.simplefilter("ignore", UserWarning)
                table = np.loadtxt(file, delimiter=",", dtype=np.float64, ndmin=2)
    except PairingError:
        raise
    except (OSError, UnicodeDecodeError, ValueError) as error:
        cause = shorten(first_line(str(error))) or type(error).__name__
        raise PairingError(f"{path}: not a readable --games-csv file ({cause})") from error
    if table.shape[0] == 0 or table.shape[1] != len(header):
        raise PairingError(f"{path}: no games, or rows of other lengths than its header")
    return {name: table[:, i] for i, name in enumerate(header)}


def read_resume_games(directory: str | Path) -> dict[str, np.ndarray]:
    """The games of the chunks finished so far in an ``evaluate.py --resume`` directory,
    as the columns `read_games_csv` returns (``seed``, ``deal``, ``rotation`` and
    ``agent_<i>_win_share``).

    Args:
        directory: The ``--resume`` directory.

    Returns:
        Column name -> float64 (G,), one entry per game of the finished chunks.

    Raises:
        PairingError: Not a resume directory, a damaged file in it, or no chunk finished.
    """
    try:
        finished = read_finished_chunks(directory)
    except ResumeError as error:
        raise PairingError(str(error)) from None
    if not finished.records:
        raise PairingError(f"{directory}: no chunk finished yet (0 of {finished.chunks})")
    deal = np.concatenate([part.deal for part in finished.records]).astype(np.float64)
    shares = np.concatenate([part.win_share for part in finished.records])
    columns = {"seed": np.full(deal.size, float(finished.seed)), "deal": deal,
               "rotation": np.concatenate([part.rotation for part in finished.records])
               .astype(np.float64)}
    for i in range(finished.num_players):
        columns[f"agent_{i}_win_share"] = shares[:, i]
    return columns


def read_run(path: str | Path) -> dict[str, np.ndarray]:
    """A run's per-game columns: `read_resume_games` for a directory, else
    `read_games_csv`."""
    return read_resume_games(path) if Path(path).is_dir() else read_games_csv(path)


def deal_shares(columns: dict[str, np.ndarray], agent: int) -> dict[int, float]:
    """Agent position ``agent``'s mean win share per deal group played in full.

    A group is whole when it has as many games as the largest group of the file (all its
    seat arrangements: P rotations, or P! orders with ``--seating all``).

    Args:
        columns: `read_games_csv` columns (``deal`` and ``agent_<agent>_win_share`` used).
        agent: Agent position (the order of ``--agents``).

    Returns:
        Deal group -> mean win share in [0, 1].
    """
    deals = columns["deal"].astype(np.int64)
    shares = columns[f"agent_{agent}_win_share"]
    counts = np.bincount(deals)
    sums = np.bincount(deals, weights=shares)
    group = int(counts.max())
    return {int(d): float(sums[d] / group) for d in np.flatnonzero(counts == group)}


def paired_runs(
    first: str | Path, second: str | Path, *more: str | Path, agent: int = 0
) -> tuple[np.ndarray, ...]:
    """One agent position's per-deal win shares in two or more runs, over their common deals.

    Args:
        first: ``--games-csv`` file or ``--resume`` directory of the first run.
        second: The same of the second run (same seed and player count).
        *more: further runs, paired alike.
        agent: Agent position compared (the order of ``--agents``).

    Returns:
        ``(first_shares, second_shares, *more_shares, seed)``: float64 (D,) each, over the D
        deal groups every run played in full, in deal order.

    Raises:
        PairingError: Unreadable files, other seeds or player counts, no such agent, or
            no deal group in common.
    """
    paths = [first, second, *more]
    runs = [read_run(path) for path in paths]
    seeds = [set(run["seed"].astype(np.int64).tolist()) for run in runs]
    for path_seeds in seeds[1:]:
        if len(seeds[0]) != 1 or path_seeds != seeds[0]:
            raise PairingError(f"the runs used other seeds ({sorted(seeds[0])} and "
                               f"{sorted(path_seeds)}): their deals differ")
    counts = [sum(name.endswith("_win_share") for name in run) for run in runs]
    for count in counts[1:]:
        if count != counts[0]:
            raise PairingError(f"the runs had {counts[0]} and {count} agents: their deals "
                               "differ")
    if not 0 <= agent < counts[0]:
        raise PairingError(f"--agent must be in [0, {counts[0] - 1}], got {agent}")
    shares = [deal_shares(run, agent) for run in runs]
    common = sorted(set.intersection(*(set(run_shares) for run_shares in shares)))
    if not common:
        raise PairingError("the runs have no whole deal group in common")
    return (*(np.array([run_shares[d] for d in common]) for run_shares in shares),
            int(next(iter(seeds[0]))))


def interval_text(shares: np.ndarray, signed: bool = False) -> str:
    """A win rate or a paired difference with its 95% interval, as text.

    Args:
        shares: float (D,): per-deal win shares in [0, 1], or with ``signed`` per-deal
            differences of two win shares.
        signed: Format a difference.

    Returns:
        ``"72.0% [71.2, 72.9]"``: the win rate and its interval (`win_rate_interval`:
        Student-t, clipped to [0, 100]); with ``signed``, ``"+1.2 [+0.6, +1.8]"``: the
        mean difference and its Student-t interval, in points.
    """
    interval = mean_confidence_interval if signed else win_rate_interval
    mean, low, high = (100 * value for value in interval(shares))
    if signed:
        return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"
    return f"{mean:.1f}% [{low:.1f}, {high:.1f}]"


def network_rules(checkpoint: str | Path):
    """The `SkyjoRules` a checkpoint was trained for.

    Raises:
        agents.ppo.checkpoint.CheckpointError: A missing, corrupt or foreign file.
    """
    from agents.ppo.checkpoint import read_metadata
    from skyjo_env.core import SkyjoRules

    return SkyjoRules.from_dict(read_metadata(checkpoint)["rules"])


def common_rules(networks: list[str | Path]):
    """The rules all ``networks`` were trained for.

    Raises:
        ValueError: A network trained for other rules than the first (their deals and
            seats could not be paired), named.
        agents.ppo.checkpoint.CheckpointError: A missing, corrupt or foreign file.
    """
    rules = network_rules(networks[0])
    for network in networks[1:]:
        if network_rules(network) != rules:
            raise ValueError(f"{network} was trained for other rules than {networks[0]} "
                             f"({rules.num_players} players); compare networks of one game")
    return rules


def network_tournament(network: str | Path, games: int, seed: int):
    """``ppo:network`` (agent 0) against ``ev`` in every other seat, on its own rules.

    Args:
        network: A checkpoint.
        games: Games (rounded up to whole deal groups).
        seed: Master seed of the deals: the same deals for every network with the same
            ``games``, ``seed`` and number of players.

    Returns:
        The `agents.evaluation.tournament.TournamentResult` (its records give
        `agents.evaluation.report.render_games_csv` rows).
    """
    from agents.evaluation.tournament import play_tournament
    from agents.registry import make_agent

    rules = network_rules(network)
    agents = [make_agent(f"ppo:{network}", rules, seed=0)] + [
        make_agent("ev", rules, seed=seat) for seat in range(1, rules.num_players)]
    return play_tournament(agents, rules, games, seed, progress=False, ratings=False)


def tournament_deal_shares(result) -> np.ndarray:
    """Agent 0's mean win share per deal group of a `TournamentResult`: float64 (D,)."""
    records = result.records
    return np.bincount(records.deal, weights=records.win_share[:, 0]) / np.bincount(records.deal)


def network_deal_shares(network: str | Path, games: int, seed: int) -> np.ndarray:
    """``ppo:network`` against ``ev`` in every other seat (`network_tournament`): its mean
    win share per deal group, float64 (D,)."""
    return tournament_deal_shares(network_tournament(network, games, seed))


__all__ = [
    "GAMES_CSV_COLUMNS",
    "PairingError",
    "common_rules",
    "deal_shares",
    "interval_text",
    "network_deal_shares",
    "network_rules",
    "network_tournament",
    "paired_runs",
    "read_games_csv",
    "read_resume_games",
    "read_run",
    "tournament_deal_shares",
]

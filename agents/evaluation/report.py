"""Tournament reports: a terminal table, JSON, CSV and a win-rate bar chart.

Every ``render_*`` function returns the file content (text or bytes) without touching the
disk, so a caller can render everything first and write nothing if any rendering fails;
`write_atomic` then writes each file through a temporary file and ``os.replace``, so a
reader never sees a half-written report.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any

from agents.atomic import atomic_path
from agents.evaluation.games import SEATING_WORDS, rounding_note
from agents.evaluation.tournament import TournamentResult

#: Column order of the CSV file (one row per agent position).
CSV_FIELDS = (
    "name",
    "spec",
    "games",
    "wins",
    "win_rate",
    "win_rate_ci_low",
    "win_rate_ci_high",
    "mean_total",
    "mean_total_ci_low",
    "mean_total_ci_high",
    "mean_round_score",
    "mean_rounds_per_game",
    "finish_rate",
    "penalty_rate",
    "penalties_per_game",
    "eliminations_per_game",
    "mean_rank",
    "truncated_games",
    "rating_mu",
    "rating_sigma",
    "rating_ordinal",
)


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def games_per_second_text(rate: float) -> str:
    """A speed for the table: whole games per second from 10 up, else two significant
    digits (a searched agent plays well under a game a second, which ``:.0f`` showed as 0)."""
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"


def format_table(result: TournamentResult) -> str:
    """A readable, aligned plain-text summary of a tournament.

    Args:
        result: The tournament.

    Returns:
        Multi-line text (no trailing newline).
    """
    rules = result.rules
    rounded = rounding_note(result.requested_games, result.games)
    speed = (
        f", {result.elapsed_s:.1f} s, {games_per_second_text(result.games_per_second)} games/s"
        if result.elapsed_s > 0
        else ""
    )
    lines = [
        f"{result.games} games{rounded}: {result.deals} deals x {_arrangements(result)}, "
        f"seed {result.seed}, target {rules.target_score}{speed}",
    ]
    truncated = int(result.records.truncated.sum())
    if truncated:
        lines.append(
            f"warning: {truncated} game(s) truncated by the turn cap "
            f"(max_turns_per_round={rules.max_turns_per_round}): no winner in those"
        )
    headers = [
        "agent",
        "win rate",
        "95% CI",
        "mean total",
        "round score",
        "rounds/game",
        "finish rate",
        "penalty rate",
        "elim/game",
        "mean rank",
        "rating mu",
        "sigma",
        "ordinal",
    ]
    rows = []
    for stats in result.agents:
        low, high = stats.win_rate_ci
        rows.append(
            [
                stats.name if stats.name == stats.spec else f"{stats.name} ({stats.spec})",
                f"{100 * stats.win_rate:.1f}%",
                f"[{100 * low:.1f}, {100 * high:.1f}]",
                _fmt(stats.mean_total, 1),
                _fmt(stats.mean_round_score),
                _fmt(stats.mean_rounds_per_game),
                _fmt(stats.finish_rate, 3),
                _fmt(stats.penalty_rate, 3),
                _fmt(stats.eliminations_per_game),
                _fmt(stats.mean_rank),
                _fmt(stats.rating_mu),
                _fmt(stats.rating_sigma),
                _fmt(stats.rating_ordinal),
            ]
        )
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    lines.append(line(headers))
    lines.append("  ".join("-" * width for width in widths))
    lines.extend(line(row) for row in rows)
    lines.append(
        "win rate: shared wins count 1/k; CI: Student-t over per-deal means "
        "(Wilson if no spread); finish rate: rounds ended / rounds played; "
        "penalty rate: penalised / rounds ended; a game truncated by the turn cap counts as "
        "no win for anyone and is left out of the ratings"
    )
    return "\n".join(lines)


def _json_safe(value: Any) -> Any:
    """Replace non-finite floats (not valid JSON) by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def render_json(result: TournamentResult) -> str:
    """The report as JSON text (see `TournamentResult.to_dict` for the keys)."""
    return json.dumps(_json_safe(result.to_dict()), indent=2, allow_nan=False) + "\n"


def csv_rows(result: TournamentResult) -> list[dict[str, Any]]:
    """One flat dict per agent position, keys `CSV_FIELDS` then ``seat_<s>_win_rate``."""
    rows = []
    for stats in result.agents:
        data = stats.to_dict()
        row = {key: data[key] for key in CSV_FIELDS if key in data}
        row["win_rate_ci_low"], row["win_rate_ci_high"] = stats.win_rate_ci
        row["mean_total_ci_low"], row["mean_total_ci_high"] = stats.mean_total_ci
        row["rating_mu"] = stats.rating_mu
        row["rating_sigma"] = stats.rating_sigma
        row["rating_ordinal"] = stats.rating_ordinal
        ordered = {key: row[key] for key in CSV_FIELDS}
        for seat, rate in enumerate(stats.seat_win_rates):
            ordered[f"seat_{seat}_win_rate"] = rate
        rows.append(ordered)
    return rows


def render_csv(result: TournamentResult) -> str:
    """The per-agent statistics as CSV text with a header row."""
    rows = csv_rows(result)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _arrangements(result: TournamentResult) -> str:
    """How each deal seated the agents, for the table's first line: ``3 seat rotations``
    or ``6 seat orders (all)``."""
    words = f"{result.records.games_per_deal} seat {SEATING_WORDS[result.seating]}"
    return f"{words} (all)" if result.seating == "all" else words


def render_games_csv(result: TournamentResult) -> str:
    """Every game as a CSV row, for statistics of one's own and for pairing two runs on
    the same deals (`agents.evaluation.compare.paired_runs`, ``skyjo-compare runs``: same
    seed, agents and player count, so the same deal groups).

    Columns: ``seed``, ``game``, ``deal`` (deal group), ``rotation`` (the seat arrangement:
    agent ``i`` sat at seat ``(i + rotation) % P``, or with ``--seating all`` at
    ``itertools.permutations(range(P))[rotation][i]``), ``rounds``, ``truncated`` (0/1),
    then per agent position ``i`` (the order of ``--agents``): ``agent_<i>_total`` and
    ``agent_<i>_win_share`` (1/k for each of the k lowest totals, 0 otherwise and in a
    truncated game).
    """
    records = result.records
    players = records.total.shape[1]
    header = ["seed", "game", "deal", "rotation", "rounds", "truncated"]
    for i in range(players):
        header += [f"agent_{i}_total", f"agent_{i}_win_share"]
    lines = [",".join(header)]
    for g in range(records.deal.size):
        cells = [str(result.seed), str(g), str(records.deal[g]), str(records.rotation[g]),
                 str(records.rounds[g]), str(int(records.truncated[g]))]
        for i in range(players):
            cells += [str(records.total[g, i]), f"{records.win_share[g, i]:.6g}"]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def render_plot(result: TournamentResult) -> bytes:
    """PNG bytes of a bar chart of win rates with their 95% intervals as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    names = [stats.name for stats in result.agents]
    rates = [stats.win_rate for stats in result.agents]
    below = [stats.win_rate - stats.win_rate_ci[0] for stats in result.agents]
    above = [stats.win_rate_ci[1] - stats.win_rate for stats in result.agents]
    figure = Figure(figsize=(max(4.0, 1.2 * len(names) + 2.0), 4.0), layout="constrained")
    axes = figure.subplots()
    positions = range(len(names))
    axes.bar(positions, rates, yerr=[below, above], capsize=6, color="tab:blue", alpha=0.8)
    axes.axhline(1 / result.rules.num_players, color="gray", linestyle="--", linewidth=1,
                 label="even share")
    axes.set_xticks(list(positions), names, rotation=20 if len(names) > 4 else 0)
    axes.set_ylim(0, 1)
    axes.set_ylabel("win rate (95% CI)")
    axes.set_title(f"{result.games} games, seed {result.seed}")
    axes.legend(loc="upper right")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def write_atomic(path: str | os.PathLike, content: str | bytes) -> None:
    """Write ``content`` to ``path`` through a temporary file in the same directory.

    Raises:
        OSError: The directory does not exist or is not writable (``path`` is untouched).
    """
    data = content.encode() if isinstance(content, str) else content
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def write_reports(
    result: TournamentResult,
    *,
    json_path: str | os.PathLike | None = None,
    csv_path: str | os.PathLike | None = None,
    plot_path: str | os.PathLike | None = None,
    games_csv_path: str | os.PathLike | None = None,
) -> list[Path]:
    """Render every requested report first, then write each atomically.

    Args:
        result: The tournament.
        json_path: Where to write the JSON report, or None.
        csv_path: Where to write the CSV table, or None.
        plot_path: Where to write the PNG chart, or None.
        games_csv_path: Where to write one CSV row per game (`render_games_csv`), or None.

    Returns:
        The paths written.
    """
    outputs: list[tuple[Path, str | bytes]] = []
    if json_path is not None:
        outputs.append((Path(json_path), render_json(result)))
    if csv_path is not None:
        outputs.append((Path(csv_path), render_csv(result)))
    if plot_path is not None:
        outputs.append((Path(plot_path), render_plot(result)))
    if games_csv_path is not None:
        outputs.append((Path(games_csv_path), render_games_csv(result)))
    for path, content in outputs:
        write_atomic(path, content)
    return [path for path, _ in outputs]


__all__ = [
    "CSV_FIELDS",
    "csv_rows",
    "format_table",
    "games_per_second_text",
    "render_csv",
    "render_games_csv",
    "render_json",
    "render_plot",
    "write_atomic",
    "write_reports",
]

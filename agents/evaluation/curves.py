"""Learning curves: the evaluations a training run logged, read and drawn.

A training run appends one line per evaluation to ``RUN_DIR/eval.jsonl``
(`agents.training.trainer`): the step count, the stage of a staged run, and per opponent
the win rate with its 95% interval. `read_eval_log` reads such a file, checking every line
(a damaged or foreign file is an `EvalLogError` naming the file, the line and the field);
`render_curves` draws the win rates of one or more runs against their step counts, with a
staged run's stage boundaries marked. The command line is ``skyjo-compare curves``
(`agents.cli.compare`).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from skyjo_env.core.errors import shorten

#: Largest ``eval.jsonl`` read (a run of 100M steps evaluated every 100k steps writes
#: about 1,000 lines of well under 1 kB each).
MAX_EVAL_LOG_BYTES = 64 * 1024 * 1024


class EvalLogError(ValueError):
    """An ``eval.jsonl`` that cannot be read as a run's evaluation log."""


class Evaluation(NamedTuple):
    """One logged evaluation.

    Attributes:
        timesteps: The run's step count when it was made.
        stage: The stage's name (a staged run), or None.
        win_rates: Opponent name -> (win rate, 95% interval low, high), all in 0..1.
    """

    timesteps: int
    stage: str | None
    win_rates: dict[str, tuple[float, float, float]]


def read_eval_log(path: str | Path) -> list[Evaluation]:
    """The evaluations of an ``eval.jsonl`` file (or of ``RUN_DIR/eval.jsonl``), in order.

    Args:
        path: The file, or a run directory holding it.

    Returns:
        One `Evaluation` per line (blank lines skipped).

    Raises:
        EvalLogError: No such file, a file over `MAX_EVAL_LOG_BYTES`, a line that is not
            JSON or lacks a field, or a value of the wrong type or range; the message names
            the file, the line and the field.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "eval.jsonl"
    try:
        size = path.stat().st_size
        if size > MAX_EVAL_LOG_BYTES:
            raise EvalLogError(f"{path}: {size:,} bytes; an eval.jsonl is at most "
                               f"{MAX_EVAL_LOG_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise EvalLogError(f"cannot read {path}: {shorten(str(error), 120)}") from None
    evaluations = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            evaluations.append(_evaluation(line, f"{path} line {number}"))
    if not evaluations:
        raise EvalLogError(f"{path} holds no evaluation (the run has not evaluated yet)")
    return evaluations


def _evaluation(line: str, where: str) -> Evaluation:
    """One ``eval.jsonl`` line as an `Evaluation`, or an `EvalLogError` naming ``where``."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        raise EvalLogError(f"{where} is not JSON: {shorten(line, 60)}") from None
    if not isinstance(record, dict):
        raise EvalLogError(f"{where} is not a JSON object")
    timesteps = record.get("timesteps")
    if not isinstance(timesteps, int) or isinstance(timesteps, bool) or timesteps < 0:
        raise EvalLogError(f"{where}: timesteps must be an int >= 0, got "
                           f"{shorten(repr(timesteps), 40)}")
    stage = record.get("stage")
    if stage is not None and not isinstance(stage, str):
        raise EvalLogError(f"{where}: stage must be a name, got {shorten(repr(stage), 40)}")
    results = record.get("results")
    if not isinstance(results, dict) or not results:
        raise EvalLogError(f"{where}: results must map opponents to win rates")
    return Evaluation(timesteps, stage, {
        str(name): _win_rate(entry, f"{where}: results[{shorten(repr(name), 40)}]")
        for name, entry in results.items()
    })


def _win_rate(entry: object, where: str) -> tuple[float, float, float]:
    """(win rate, interval low, high) of one opponent's entry, each a number in 0..1."""
    if not isinstance(entry, dict):
        raise EvalLogError(f"{where} is not a JSON object")
    interval = entry.get("win_rate_ci")
    values = [entry.get("win_rate"), *(interval if isinstance(interval, list) else [None])]
    if len(values) != 3 or not all(_is_share(value) for value in values):
        raise EvalLogError(f"{where}: win_rate and win_rate_ci [low, high] must be numbers "
                           "in 0..1")
    return (float(values[0]), float(values[1]), float(values[2]))


def _is_share(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and 0.0 <= value <= 1.0)


def stage_starts(evaluations: Sequence[Evaluation]) -> list[tuple[int, str]]:
    """Where each stage of a staged run begins, as far as its evaluations show: (step
    count of the last evaluation before the stage's first, stage name), in order; empty
    for a run without stages."""
    starts: list[tuple[int, str]] = []
    previous_stage, previous_steps = None, 0
    for evaluation in evaluations:
        if evaluation.stage is not None and evaluation.stage != previous_stage:
            starts.append((previous_steps if starts else 0, evaluation.stage))
        previous_stage, previous_steps = evaluation.stage, evaluation.timesteps
    return starts


def render_curves(runs: Mapping[str, Sequence[Evaluation]], parity: float | None = None,
                  title: str | None = None) -> bytes:
    """PNG bytes of each run's win rates against its step count, one line per run and
    opponent with its 95% interval shaded, a staged run's stage starts as dotted lines.

    Args:
        runs: Run name -> its evaluations (`read_eval_log`), at least one run.
        parity: The even share to draw as a dashed line (1 / players), or None.
        title: The chart's title, or None.

    Returns:
        The PNG file's bytes.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8.0, 4.5), layout="constrained")
    axes = figure.subplots()
    for run, evaluations in runs.items():
        steps = [evaluation.timesteps / 1e6 for evaluation in evaluations]
        opponents = sorted({name for evaluation in evaluations for name in evaluation.win_rates})
        for opponent in opponents:
            shown = [(x, evaluation.win_rates[opponent])
                     for x, evaluation in zip(steps, evaluations, strict=True)
                     if opponent in evaluation.win_rates]
            xs = [x for x, _ in shown]
            label = f"{run} vs {opponent}" if len(runs) > 1 else f"vs {opponent}"
            line, = axes.plot(xs, [rate for _, (rate, _, _) in shown], marker=".", label=label)
            axes.fill_between(xs, [low for _, (_, low, _) in shown],
                              [high for _, (_, _, high) in shown], color=line.get_color(),
                              alpha=0.15, linewidth=0)
        if len(runs) == 1:
            for start, stage in stage_starts(evaluations):
                axes.axvline(start / 1e6, color="gray", linestyle=":", linewidth=1)
                axes.annotate(stage, (start / 1e6, 1.0), xycoords=("data", "axes fraction"),
                              xytext=(3, -12), textcoords="offset points", fontsize=8,
                              color="dimgray")
    if parity is not None:
        axes.axhline(parity, color="gray", linestyle="--", linewidth=1, label="even share")
    axes.set_xlabel("steps (millions)")
    axes.set_ylabel("win rate (95% CI)")
    axes.set_ylim(0, 1)
    if title:
        axes.set_title(title)
    axes.legend(loc="lower right", fontsize=8)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


__all__ = [
    "MAX_EVAL_LOG_BYTES",
    "EvalLogError",
    "Evaluation",
    "read_eval_log",
    "render_curves",
    "stage_starts",
]

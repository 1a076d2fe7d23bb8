"""Reading a training run's logs in tests (imported by basename, like `hidden_cards`):
its evaluations without timing, and its TensorBoard scalars without timing, for comparing
two runs that must be the same run."""

from __future__ import annotations

import json
from pathlib import Path


def evaluations(run_dir: Path) -> list[dict]:
    """The run's ``eval.jsonl`` lines as dicts, without their ``seconds``."""
    lines = (run_dir / "eval.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in lines]


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """The run's TensorBoard scalars by tag, as (step, value) pairs in file order (the
    timing tags left out)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, list[tuple[int, float]]] = {}
    for directory in sorted((run_dir / "tb").iterdir()):
        events = EventAccumulator(str(directory))
        events.Reload()
        for tag in events.Tags()["scalars"]:
            if not tag.startswith("time/") and tag not in ("imitation/seconds",
                                                            "expert/seconds"):
                found.setdefault(tag, []).extend((e.step, e.value) for e in events.Scalars(tag))
    return found

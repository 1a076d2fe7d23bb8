"""Replay files for the skyjo-web tests (imported by basename: ``tests/web`` has no
``__init__.py``, like ``tests/agents``)."""

from __future__ import annotations

from agents.evaluation.replays import ReplayRecorder
from agents.evaluation.tournament import play_tournament
from agents.registry import make_agent
from skyjo_env.core import load_rules


def write_replays(directory, count: int = 2, select: str = "first", games: int = 4) -> list:
    """Play a short ev-vs-greedy tournament of single rounds and keep ``count`` replays.

    Returns:
        The paths written.
    """
    rules = load_rules("single_round", num_players=2)
    agents = [make_agent("ev", rules, 1), make_agent("greedy", rules, 2)]
    recorder = ReplayRecorder(directory, count, select, rules, 0, ["ev", "greedy"],
                              ["ev", "greedy"])
    play_tournament(agents, rules, games, 0, progress=False, ratings=False, recorder=recorder)
    return recorder.written

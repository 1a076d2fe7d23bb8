"""Agents for skyjo-rl: baselines, PPO, search, the agent registry, evaluation, sweeps and
the command lines.

`make_agent` builds an agent from a spec (``random``, ``greedy``, ``ev``,
``package.module:Class``, ``ppo:PATH``, ``search:BASE``); `play_tournament` and
`evaluate_agents` pit agents against each other over duplicated, seat-rotated deals.
"""

from agents.evaluation.games import AgentActionError, TooManyGamesError, play_games
from agents.evaluation.tournament import (
    AgentStats,
    TournamentResult,
    evaluate_agents,
    play_tournament,
)
from agents.registry import AgentSpecError, make_agent
from skyjo_env.protocol import Agent, RandomAgent

_HEURISTICS = ("EVAgent", "GreedyAgent")


def __getattr__(name: str):
    # the heuristics load on first use, so a problem there never breaks `import agents`
    if name in _HEURISTICS:
        from agents.baselines import heuristics

        return getattr(heuristics, name)
    raise AttributeError(f"module 'agents' has no attribute {name!r}")


__all__ = [
    "Agent",
    "AgentActionError",
    "AgentSpecError",
    "AgentStats",
    "EVAgent",
    "GreedyAgent",
    "RandomAgent",
    "TooManyGamesError",
    "TournamentResult",
    "evaluate_agents",
    "make_agent",
    "play_games",
    "play_tournament",
]

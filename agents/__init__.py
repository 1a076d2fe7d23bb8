"""Agents for skyjo-rl: baselines, PPO, search, the agent registry, evaluation, training,
sweeps and the command lines.

`make_agent` builds an agent from a spec (``random``, ``greedy``, ``ev``,
``package.module:Class``, ``ppo:PATH``, ``search:BASE``); `play_tournament` and
`evaluate_agents` pit agents against each other over duplicated, seat-rotated deals.
"""

import importlib

#: Where each exported name lives. They load on first use, so importing a subpackage
#: (`agents.ppo`, `agents.search`) never drags in the layers above it, and a problem in
#: one (the heuristics) never breaks `import agents`.
_EXPORTS = {
    "AgentActionError": "agents.evaluation.games",
    "TooManyGamesError": "agents.evaluation.games",
    "play_games": "agents.evaluation.games",
    "AgentStats": "agents.evaluation.tournament",
    "TournamentResult": "agents.evaluation.tournament",
    "evaluate_agents": "agents.evaluation.tournament",
    "play_tournament": "agents.evaluation.tournament",
    "AgentSpecError": "agents.registry",
    "make_agent": "agents.registry",
    "Agent": "skyjo_env.protocol",
    "RandomAgent": "skyjo_env.protocol",
    "EVAgent": "agents.baselines.heuristics",
    "GreedyAgent": "agents.baselines.heuristics",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
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

"""Rule-based baselines: ``greedy`` (thresholds, `agents.baselines.greedy`) and ``ev``
(expected value + card counting, `agents.baselines.ev`).

Both act only from the observation vector and the legal-action mask (the Agent protocol
of `skyjo_env.protocol`), decoded inside compiled kernels with the slices of
`skyjo_env.encoding.ObservationLayout`: they cannot see a face-down card or the draw pile
order, because the observation does not contain them. Both pick only among the actions
the mask allows; an observation whose mask allows nothing of its phase raises
`HeuristicChoiceError` (`agents.baselines.common`) instead of a substitute action.

This module is the stable import path (the registry and older code use it).
"""

from agents.baselines.common import HeuristicChoiceError
from agents.baselines.ev import EVAgent, ev_actions
from agents.baselines.greedy import GreedyAgent, greedy_actions

__all__ = ["EVAgent", "GreedyAgent", "HeuristicChoiceError", "ev_actions", "greedy_actions"]

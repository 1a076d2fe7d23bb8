"""Decision-time search agents: ``search:BASE`` (determinized rollouts of a base agent).

`agents.search.observed` rebuilds engine games from observations; `agents.search.agent`
samples information sets from them and rolls out the base agent; `agents.search.values`
values rollouts with a PPO base agent's critic (``leaf=critic``) and supplies its action
priors (``top_actions``); `agents.search.luck` measures the luck of the cards a rollout met
(``luck=adjusted``); `agents.search.batching` batches the rollouts' network calls (identical
rows once, slices of a few thousand rows) without changing an action.
"""

from agents.search.agent import (
    OPTION_LIMITS,
    PPO_SEARCH,
    ActionValues,
    RoundMarginValue,
    SearchAgent,
    SearchOptionError,
    SearchOptions,
    ValueFunction,
    is_search_spec,
    search_options,
)
from agents.search.observed import ObservationMismatchError, state_from_observations
from agents.search.values import CriticValue, CriticValueError, PolicyPrior

__all__ = [
    "OPTION_LIMITS",
    "PPO_SEARCH",
    "ActionValues",
    "CriticValue",
    "CriticValueError",
    "ObservationMismatchError",
    "PolicyPrior",
    "RoundMarginValue",
    "SearchAgent",
    "SearchOptionError",
    "SearchOptions",
    "ValueFunction",
    "is_search_spec",
    "search_options",
    "state_from_observations",
]

"""Decision-time search agents: ``search:BASE`` (determinized rollouts of a base agent).

`agents.search.observed` rebuilds engine games from observations; `agents.search.agent`
samples information sets from them and rolls out the base agent to the round's end.
"""

from agents.search.agent import (
    RoundMarginValue,
    SearchAgent,
    SearchOptionError,
    SearchOptions,
    ValueFunction,
)
from agents.search.observed import ObservationMismatchError, state_from_observations

__all__ = [
    "ObservationMismatchError",
    "RoundMarginValue",
    "SearchAgent",
    "SearchOptionError",
    "SearchOptions",
    "ValueFunction",
    "state_from_observations",
]

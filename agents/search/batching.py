"""Network calls of the search's rollouts, batched for speed without changing a result.

A search's rollouts ask the rollout agent for the actions of thousands of games per step.
With a network that decides each row from that row alone (a greedy `agents.ppo` agent,
``deterministic=True``), two things cut that work and give the very same actions:

- identical rows are computed once (`distinct_rows`): right after the searched action,
  the next seat to act sees the same thing in most samples of a row (it sees neither
  the redealt face-down cards nor the draw pile), so the first steps of a rollout batch
  repeat most of their (observation, mask) rows; later steps drift apart, and merging
  stops once a step finds few repeats (`RolloutActor`);
- the remaining rows go to the network in slices of at most `NETWORK_ROWS` (a float32
  MLP over ~13,000 rows runs ~10-15% slower per row than over a few thousand on one
  core: its activations no longer fit the caches).

Both rely on the network's output for a row not depending on the other rows of its
batch, which holds for these float32 and bfloat16 CPU kernels (every rollout and retest
value stays bit-identical, checked on the shipped networks), and which the module
docstring of `agents.search.agent` already assumes for the split of a large batch.
An agent that may draw random numbers or read the whole batch (``random``, a sampling
network) is called on every row at once, as before.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.protocol import Agent, reads_observations

#: Most rows a row-alone agent (`decides_rows_alone`) is called with at once.
NETWORK_ROWS = 4096

#: Merging identical rows goes on while at least this share of a step's rows repeat
#: another (below it, finding the repeats costs about what it saves).
MERGE_WHILE = 0.1

#: Fixed weights of the row keys of `distinct_rows`: a hash, so any numbers do; not
#: randomness of the search (the rows found are the same for any weights).
_KEY_SEED = 20_240_517


def decides_rows_alone(agent: Agent) -> bool:
    """Whether ``agent`` chooses every row from that row's observation and mask alone, the
    same in any batch: a greedy network (``deterministic`` True, `agents.ppo.PPOAgent`'s
    default) that reads its observations."""
    return getattr(agent, "deterministic", None) is True and reads_observations(agent)


def distinct_rows(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Each row's representative: the first row with the same bits in both arrays.

    Rows are keyed by two float32 projections of the observation, and a row merged with
    an earlier one by its key is compared with it bit by bit (observation and mask), so
    a key collision costs a network row, never a wrong action.

    Args:
        observations: float32 (N, O).
        masks: bool (N, A).

    Returns:
        int64 (N,): for each row the index of a row equal to it bit for bit (itself when
        none comes first); ``rep[rep] == rep``.
    """
    n = observations.shape[0]
    weights = np.random.default_rng(_KEY_SEED).random((2, observations.shape[1]),
                                                     dtype=np.float32)
    # einsum, not ``@``: a BLAS call may start threads that then spin, beside a network
    # pinned to one core (its own loop is as fast at these sizes)
    high, low = (np.einsum("ij,j->i", observations, w).astype(np.float32).view(np.uint32)
                 for w in weights)
    keys = (high.astype(np.uint64) << np.uint64(32)) | low
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rep = first[inverse].astype(np.int64)
    merged = np.flatnonzero(rep != np.arange(n))
    if merged.size:
        bits = observations.view(np.uint32)
        same = ((bits[merged] == bits[rep[merged]]).all(axis=1)
                & (masks[merged] == masks[rep[merged]]).all(axis=1))
        rep[merged[~same]] = merged[~same]  # a collision: its own row
    return rep


def unique_row_inverse(rows: np.ndarray) -> np.ndarray:
    """``np.unique(rows, axis=0, return_inverse=True)[1]`` for float32 rows (N, O), as int
    (N,), found on the distinct rows only (`distinct_rows`: much faster when most rows
    repeat others)."""
    rep = distinct_rows(rows, np.zeros((rows.shape[0], 0), bool))
    firsts, position = np.unique(rep, return_inverse=True)
    _, rank = np.unique(rows[firsts], axis=0, return_inverse=True)
    return rank.ravel()[position.ravel()]


def _slices(rows: int) -> list[tuple[int, int]]:
    """(first, end) of the fewest equal slices of ``rows`` rows with at most
    `NETWORK_ROWS` each (equal: no small last slice, whose call costs more per row)."""
    count = max(1, -(-rows // NETWORK_ROWS))
    ends = [rows * k // count for k in range(count + 1)]
    return list(zip(ends[:-1], ends[1:], strict=True))


class RolloutActor:
    """One agent's actions through one rollout (a batch of games stepped together).

    An agent that decides rows alone (`decides_rows_alone`) is asked once per distinct
    row while a step finds at least `MERGE_WHILE` of its rows repeated, and in slices of
    `NETWORK_ROWS` rows; any other agent once per step on all its rows.

    Args:
        agent: The agent.
    """

    def __init__(self, agent: Agent):
        self.agent = agent
        self.sliced = decides_rows_alone(agent)
        self.merging = self.sliced

    def act(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The agent's actions: int (N,) from observations float32 (N, O), masks bool (N, A)."""
        if not self.sliced:
            return self.agent.act(observations, masks)
        rows = None
        if self.merging:
            rep = distinct_rows(observations, masks)
            rows = np.flatnonzero(rep == np.arange(rep.size))
            self.merging = rows.size <= (1.0 - MERGE_WHILE) * rep.size
            observations, masks = observations[rows], masks[rows]
        actions = np.empty(observations.shape[0], np.int64)
        for first, last in _slices(actions.size):
            actions[first:last] = self.agent.act(observations[first:last], masks[first:last])
        if rows is None:
            return actions
        every = np.empty(rep.size, np.int64)
        every[rows] = actions
        return every[rep]


__all__ = ["MERGE_WHILE", "NETWORK_ROWS", "RolloutActor", "decides_rows_alone",
           "distinct_rows", "unique_row_inverse"]

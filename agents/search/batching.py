"""Network calls of the search's rollouts, batched for speed without changing a result.

A search's rollouts ask the rollout agent for the actions of thousands of games per step.
With a network that decides each row from that row alone (a greedy `agents.ppo` agent,
``deterministic=True``), two things cut that work and give the very same actions:

- identical rows are computed once (`distinct_rows`): right after the searched action,
  the next seat to act sees the same thing in most samples of a row (it sees neither
  the redealt face-down cards nor the draw pile), so the first steps of a rollout batch
  repeat most of their (observation, mask) rows (about 70%, 35%, 20% in the first three
  steps of ``search(lookahead=two):ppo:...``); later steps drift apart, and merging
  stops once a step finds few repeats (`RolloutActor`);
- the rows go to the network in calls of at most `NETWORK_ROWS` (a float32 MLP over
  ~13,000 rows runs ~10-15% slower per row than over a few thousand on one core: its
  activations no longer fit the caches).

Same actions bit for bit: a row's logits do not depend on the other rows of its call,
except that the matrix kernels round the last ``N % 4`` rows of a call of ``N`` rows
through another path (one float32 bit apart in some of them, measured on the shipped
networks). `call_plan` therefore keeps every row where it was: rows of whole `BLOCK`s in
whole blocks, the last ``N % BLOCK`` rows at the end of the last call, in order. That
holds for any kernel block dividing `BLOCK` with one torch thread (the search's setting on
one core); with several threads a small call may split its last rows otherwise, so a
greedy action could then differ where two logits are a rounding step apart, as with the
plain search's own batch splits (`agents.search.agent`). The critic's leaf values are
computed in one call, as before.
An agent that may draw random numbers or read the whole batch (``random``, a sampling
network) is called on every row at once, as before.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.protocol import Agent, reads_observations

#: Most rows a row-alone agent (`decides_rows_alone`) is called with at once (a multiple
#: of `BLOCK`).
NETWORK_ROWS = 4096

#: Rows a network's matrix kernels take together (a multiple of them): the last
#: ``N % BLOCK`` rows of a call of ``N`` rows may be rounded otherwise than the others
#: (4 on the CPUs measured: one float32 bit in some of them), so `call_plan` keeps every
#: row in whole blocks or at the same distance from its call's end, as it was.
BLOCK = 64

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
    observations = np.ascontiguousarray(observations)
    n = observations.shape[0]
    _, first, inverse = np.unique(_row_keys(observations), return_index=True,
                                  return_inverse=True)
    rep = first[inverse].astype(np.int64)
    merged = np.flatnonzero(rep != np.arange(n))
    if merged.size:
        bits = observations.view(np.uint32)
        same = ((bits[merged] == bits[rep[merged]]).all(axis=1)
                & (masks[merged] == masks[rep[merged]]).all(axis=1))
        rep[merged[~same]] = merged[~same]  # a collision: its own row
    return rep


def _row_keys(observations: np.ndarray) -> np.ndarray:
    """A 64-bit key per row of ``observations`` (float (N, O)): the bits of two float32
    projections. Equal rows get equal keys as a rule (a miss costs a network row, never
    a wrong action); unequal ones rarely do. uint64 (N,)."""
    weights = np.random.default_rng(_KEY_SEED).random((2, observations.shape[1]),
                                                     dtype=np.float32)
    # einsum, not ``@``: a BLAS call may start threads that then spin beside the network
    # (its own loop is as fast at these sizes)
    high, low = (np.einsum("ij,j->i", observations, w).astype(np.float32).view(np.uint32)
                 for w in weights)
    return (high.astype(np.uint64) << np.uint64(32)) | low


def unique_row_inverse(rows: np.ndarray) -> np.ndarray:
    """``np.unique(rows, axis=0, return_inverse=True)[1]`` for float32 rows (N, O), as int
    (N,), found on the distinct rows only (`distinct_rows`: much faster when most rows
    repeat others)."""
    rep = distinct_rows(rows, np.zeros((rows.shape[0], 0), bool))
    firsts, position = np.unique(rep, return_inverse=True)
    _, rank = np.unique(rows[firsts], axis=0, return_inverse=True)
    return rank.ravel()[position.ravel()]


def call_plan(body: np.ndarray, tail: np.ndarray) -> list[np.ndarray]:
    """The rows of each network call that computes rows as a batch's own call did.

    Args:
        body: int (U,), rows that sat in whole `BLOCK`s of their batch (its first
            ``N - N % BLOCK`` rows, or the distinct ones among them).
        tail: int (N % BLOCK,), the batch's last rows, in order.

    Returns:
        int64 arrays, one per call: ``body`` in the fewest slices of at most
        `NETWORK_ROWS` rows, each a multiple of `BLOCK` long (the last one padded by
        repeating its first row), and ``tail`` at the end of the last call. Every body
        row is thus again in a whole block and every tail row as far from its call's end
        as before.
    """
    count = max(1, -(-body.size // NETWORK_ROWS))
    size = max(BLOCK, -(-body.size // (count * BLOCK)) * BLOCK)
    calls = [body[first:first + size] for first in range(0, body.size, size)] or [body]
    last = calls[-1]
    padding = np.full(-last.size % BLOCK, last[0] if last.size else 0, body.dtype)
    calls[-1] = np.concatenate([last, padding, tail]).astype(np.int64)
    return calls


class RolloutActor:
    """One agent's actions through one rollout (a batch of games stepped together).

    An agent that decides rows alone (`decides_rows_alone`) is asked once per distinct
    row while a step finds at least `MERGE_WHILE` of its rows repeated, in calls of at
    most `NETWORK_ROWS` rows laid out by `call_plan`; any other agent once per step on all
    its rows.

    Args:
        agent: The agent.
    """

    def __init__(self, agent: Agent):
        self.agent = agent
        self.sliced = decides_rows_alone(agent)
        self.merging = self.sliced

    def act(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The agent's actions: int (N,) from observations float32 (N, O), masks bool (N, A)."""
        n = observations.shape[0]
        whole = n - n % BLOCK  # rows in whole blocks
        if not self.sliced or (not self.merging and n <= NETWORK_ROWS):
            return self.agent.act(observations, masks)
        body, rep = np.arange(whole), None
        if self.merging and whole:
            rep = distinct_rows(observations[:whole], masks[:whole])
            body = np.flatnonzero(rep == body)
            self.merging = body.size <= (1.0 - MERGE_WHILE) * whole
        actions = np.empty(n, np.int64)
        for rows in call_plan(body, np.arange(whole, n)):
            actions[rows] = self.agent.act(observations[rows], masks[rows])
        if rep is not None:
            actions[:whole] = actions[rep]
        return actions


__all__ = ["BLOCK", "MERGE_WHILE", "NETWORK_ROWS", "RolloutActor", "call_plan",
           "decides_rows_alone", "distinct_rows", "unique_row_inverse"]

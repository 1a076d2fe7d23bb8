"""Information-set sampling: full engine states consistent with what one seat knows.

A decision-time search (determinized rollouts) needs states that could be the true one as
far as the searching seat can tell. `sample_information_set` takes one game of a
`BatchState` and an observer seat and writes ``count`` playable games that keep everything
public and redeal everything else:

- kept: every face-up and cleared slot of every grid, the whole discard pile (order too),
  the held card when the observer may know it (it drew it, or it was taken from the
  discard pile), phase, current seat, finisher, scores, counters, the last scored round's
  grids (``final_grid``/``final_slot_state``);
- redealt: every face-down card (the observer's own too), the draw pile, and a card another
  seat has drawn. Together these hold exactly the cards the observer cannot locate
  (`engine.unseen_counts`), and each sample is a uniformly random arrangement of them;
- fresh: each sampled game's own random stream, drawn from the sampler's generator (the
  true game's stream would reveal the next reshuffle and every later deal).

The observer's knowledge is that of the observation encoder: the multiset of unseen cards,
not a perfect recall of which cards were reshuffled into the draw pile.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core import kernels, layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import BatchState, new_batch
from skyjo_env.core.jit import jit, quiet_overflow

_PLACE_DRAWN = int(Phase.PLACE_DRAWN)


@jit
def fill_samples(grid, slot_state, discard_pile, game, seat, final_grid, final_state, b,
                 pool, held_unknown, shuffle_streams, game_streams, out_grid, out_slot_state,
                 out_draw_pile, out_discard_pile, out_game, out_seat, out_rng, out_final_grid,
                 out_final_state):
    """Write one sample of game ``b``'s information set into each game of the ``out_*`` arrays.

    Args:
        grid, slot_state, discard_pile, game, seat, final_grid, final_state: The source
            batch's state arrays (kernel layout, see `kernels`).
        b: The source game.
        pool: int16 (N,), the unseen cards in a canonical (sorted) order, so that the
            samples depend on their multiset only, never on where they truly lie.
        held_unknown: Whether the held card is one of the unknown positions.
        shuffle_streams: uint64 (K,), a splitmix64 stream per sample for its shuffle
            (advanced in place).
        game_streams: uint64 (K,), the sampled games' fresh random streams.
        out_grid, ..., out_final_state: The output batch's arrays (K games).
    """
    num_players = grid.shape[1]
    num_slots = grid.shape[2]
    draw_size = game[b, layout.DRAW_SIZE]
    discard_size = game[b, layout.DISCARD_SIZE]
    n = pool.shape[0]
    cards = np.empty(n, np.int16)
    for k in range(out_game.shape[0]):
        out_grid[k] = grid[b]
        out_slot_state[k] = slot_state[b]
        out_game[k] = game[b]
        out_seat[k] = seat[b]
        out_final_grid[k] = final_grid[b]
        out_final_state[k] = final_state[b]
        out_rng[k] = game_streams[k]
        # beyond each pile's size the source arrays keep stale cards (a drawn card stays at
        # draw_pile[draw_size]); zeros there keep the samples free of hidden truth
        out_discard_pile[k, :] = 0
        out_discard_pile[k, :discard_size] = discard_pile[b, :discard_size]
        out_draw_pile[k, :] = 0
        cards[:] = pool
        for i in range(n - 1, 0, -1):
            j = kernels.random_below(shuffle_streams, k, i + 1)
            tmp = cards[i]
            cards[i] = cards[j]
            cards[j] = tmp
        used = 0
        for p in range(num_players):
            for s in range(num_slots):
                if slot_state[b, p, s] == layout.HIDDEN:
                    out_grid[k, p, s] = cards[used]
                    used += 1
        if held_unknown:
            out_game[k, layout.HELD] = cards[used]
            used += 1
        for i in range(draw_size):
            out_draw_pile[k, i] = cards[used + i]


def _require_int(name: str, value, low: int, high: int | None) -> int:
    # bools are ints to Python but never a sensible index or count
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValueError(f"{name} must be {allowed}, got {value}")
    return int(value)


def held_card_is_unknown(state: BatchState, game: int, observer: int) -> bool:
    """Whether ``observer`` cannot know the held card of ``game``: another seat drew it.

    Mirrors `kernels.unseen_counts_into` (and the observation encoder): a card taken from
    the discard pile is public, a drawn card is known to the seat that drew it only.
    """
    row = state.game[game]
    return bool(row[layout.PHASE] == _PLACE_DRAWN and row[layout.CURRENT] != observer)


def unseen_pool(state: BatchState, game: int, observer: int) -> np.ndarray:
    """The cards ``observer`` cannot locate in ``game``, sorted: int16 array of shape (N,).

    Raises:
        ValueError: The game does not hold the whole deck (a game never `reset`, or arrays
            changed by hand), so no consistent sample exists.
    """
    rules = state.rules
    counts = np.empty((1, rules.card_values.size), np.int32)
    kernels.unseen_counts_batch(
        state.grid[game : game + 1],
        state.slot_state[game : game + 1],
        state.discard_pile[game : game + 1],
        state.game[game : game + 1],
        rules.card_values,
        rules.card_counts,
        np.array([observer], np.int64),
        counts,
    )
    positions = (
        int(np.count_nonzero(state.slot_state[game] == layout.HIDDEN))
        + int(state.game[game, layout.DRAW_SIZE])
        + held_card_is_unknown(state, game, observer)
    )
    if counts.min() < 0 or int(counts.sum()) != positions:
        raise ValueError(
            f"game {game} does not hold the rules' deck ({positions} unknown positions, "
            f"{int(counts.sum())} unseen cards); was it reset?"
        )
    return np.repeat(rules.card_values, counts[0]).astype(np.int16)


def _check_out(state: BatchState, out: BatchState, count: int) -> None:
    if not isinstance(out, BatchState):
        raise ValueError(f"out must be a BatchState or None, got {type(out).__name__}")
    if out.rules != state.rules:
        raise ValueError("out must follow the same rules as state")
    if out.batch_size != count:
        raise ValueError(f"out holds {out.batch_size} games but count is {count}")
    if any(np.may_share_memory(a, s) for a, s in zip(out.arrays[:9], state.arrays[:9], strict=True)):
        raise ValueError("out must not share arrays with state (samples would overwrite it)")


def sample_information_set(
    state: BatchState,
    game: int,
    observer: int,
    count: int,
    rng: np.random.Generator,
    out: BatchState | None = None,
) -> BatchState:
    """Sample ``count`` full states of ``game`` consistent with what ``observer`` knows.

    Each sample keeps everything public (face-up and cleared slots, the discard pile in
    order, a held card the observer may know, phase, seats, scores, counters, the last
    scored round's grids) and deals the cards the observer cannot locate
    (`engine.unseen_counts`) uniformly at random over the unknown positions: every
    face-down slot of every grid, the draw pile, and a card another seat has drawn. The
    samples depend on the true state only through what the observer knows, and each gets
    a fresh random stream from ``rng``, so a sampled game's future reshuffles and deals
    are not the true game's. Every sample is a playable game for `engine.step`.

    Args:
        state: The batch holding the true game (not changed).
        game: Index of the game in ``state``.
        observer: The seat whose information set is sampled, ``0..P-1``.
        count: Number of samples ``K`` (>= 1).
        rng: The only source of chance: one shuffle stream and one game stream are drawn
            per sample.
        out: Optional batch of ``K`` games under the same rules to write into (its
            previous contents are overwritten); a new one is allocated when None.

    Returns:
        The batch of ``K`` sampled games (``out`` when given). Pile entries past each
        pile's size are zero.

    Raises:
        ValueError: ``game`` or ``observer`` out of range, ``count`` < 1, ``rng`` not a
            `np.random.Generator`, ``out`` with other rules, another batch size or memory
            shared with ``state``, or a game that does not hold the deck (never reset).
    """
    if not isinstance(state, BatchState):
        raise ValueError(f"state must be a BatchState, got {type(state).__name__}")
    game = _require_int("game", game, 0, state.batch_size - 1)
    observer = _require_int("observer", observer, 0, state.rules.num_players - 1)
    count = _require_int("count", count, 1, None)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
    if out is None:
        out = new_batch(state.rules, count)
    else:
        _check_out(state, out, count)
    pool = unseen_pool(state, game, observer)
    streams = rng.integers(0, 2**64, size=(2, count), dtype=np.uint64, endpoint=False)
    with quiet_overflow():
        fill_samples(
            state.grid,
            state.slot_state,
            state.discard_pile,
            state.game,
            state.seat,
            state.final_grid,
            state.final_slot_state,
            game,
            pool,
            held_card_is_unknown(state, game, observer),
            streams[0],
            streams[1],
            out.grid,
            out.slot_state,
            out.draw_pile,
            out.discard_pile,
            out.game,
            out.seat,
            out.rng,
            out.final_grid,
            out.final_slot_state,
        )
    return out


__all__ = ["held_card_is_unknown", "sample_information_set", "unseen_pool"]

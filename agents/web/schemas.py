"""Request bodies of the ``skyjo-web`` API (pydantic models with bounds).

Every field is bounded (counts, lengths, ranges), and unknown fields are refused, so a
request is checked before any game work starts; `docs/web.md` lists the fields.
Responses are plain JSON objects built by `agents.web.games` and `agents.web.hints`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Largest table: the published game seats 2 to 8.
MAX_PLAYERS = 8
#: Longest rules preset name.
MAX_NAME = 64
#: Most slots a grid may list (the engine's limit).
MAX_SLOTS = 64
#: Most cards the assistant's discard pile may list (the official deck has 150).
MAX_DISCARD = 1000

Spec = Annotated[str, Field(min_length=1, max_length=300)]
Cell = int | Literal["?", "x"]
Grid = Annotated[list[Cell], Field(min_length=1, max_length=MAX_SLOTS)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewGame(_Body):
    """``POST /api/games``: start a game.

    Attributes:
        mode: ``play`` (you against agents) or ``watch`` (agents only).
        players: Seats at the table, 2..8.
        agents: Agent specs: for ``play`` one per other seat (players - 1), for ``watch``
            one per seat; ``"default"`` and missing ones (or an empty list) take the
            default agent (the strongest shipped network for the table, else ``ev``).
        seat: Your seat in ``play`` mode (0..players-1).
        rules: A rules preset name (``GET /api/info`` lists them).
        target_score: Optional override of the preset's target score.
        max_rounds: Optional cap on rounds (1 plays a single round).
        seed: Deal seed; random when missing.
    """

    mode: Literal["play", "watch"] = "play"
    players: int = Field(2, ge=2, le=MAX_PLAYERS)
    agents: list[Spec] = Field(default_factory=list, max_length=MAX_PLAYERS)
    seat: int = Field(0, ge=0, lt=MAX_PLAYERS)
    rules: str = Field("official", min_length=1, max_length=MAX_NAME)
    target_score: int | None = Field(None, ge=1, le=10_000)
    max_rounds: int | None = Field(None, ge=1, le=100)
    seed: int | None = Field(None, ge=0, le=2**63 - 1)


class Move(_Body):
    """``POST /api/games/{id}/moves``: your move (an action id from the view's ``legal``)."""

    action: int = Field(ge=0, le=200)


class Step(_Body):
    """``POST /api/games/{id}/step``: decisions to step forward (watch / replay)."""

    count: int = Field(1, ge=1, le=1000)


class Seek(_Body):
    """``POST /api/games/{id}/seek``: put a watched game or replay at move ``move``."""

    move: int = Field(ge=0, le=200_000)


class OpenReplay(_Body):
    """``POST /api/replays``: open a replay, either a file of the server's replay
    directory (``name``, as ``GET /api/replays`` lists it) or a whole replay object
    (``replay``, e.g. a file the page read), not both."""

    name: str | None = Field(None, min_length=1, max_length=200)
    replay: dict | None = None


class TableInput(_Body):
    """``POST /api/assistant``: what you see at a real table.

    Attributes:
        rules: A rules preset name.
        my_grid: Your grid row by row: a card value, ``"?"`` face down, ``"x"`` cleared.
        others: The other players' grids, in playing order after you (1..7 of them).
        discard_top: The discard pile's top card.
        discard_below: The cards under it (cards already discarded this round, order
            does not matter; after a reshuffle, only those since).
        scores: Total scores before this round, yours first (default all 0).
        phase: ``choose_source`` (draw or take the discard), ``place_drawn`` (you hold a
            drawn card) or ``reveal_after_discard`` (you discarded it: turn a card up).
        drawn_card: The card you drew (``place_drawn`` only).
        finisher: The seat (1 = the next player, ...) that has gone out, if any.
        round_turns: Turns played this round, if known (else estimated).
    """

    rules: str = Field("official", min_length=1, max_length=MAX_NAME)
    my_grid: Grid
    others: list[Grid] = Field(min_length=1, max_length=MAX_PLAYERS - 1)
    discard_top: int = Field(ge=-1000, le=1000)
    discard_below: list[Annotated[int, Field(ge=-1000, le=1000)]] = Field(
        default_factory=list, max_length=MAX_DISCARD)
    scores: list[Annotated[int, Field(ge=-100_000, le=100_000)]] | None = Field(
        None, max_length=MAX_PLAYERS)
    phase: Literal["choose_source", "place_drawn", "reveal_after_discard"] = "choose_source"
    drawn_card: int | None = Field(None, ge=-1000, le=1000)
    finisher: int | None = Field(None, ge=1, lt=MAX_PLAYERS)
    round_turns: int | None = Field(None, ge=0, le=100_000)


__all__ = ["MAX_PLAYERS", "Move", "NewGame", "OpenReplay", "Seek", "Step", "TableInput"]

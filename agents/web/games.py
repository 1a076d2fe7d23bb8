"""Game sessions of ``skyjo-web`` over the project's engine, and their JSON views.

A `GameSession` is one game (a `BatchState` of one) in one of three modes:

- ``play``: a person holds one seat; after each of the person's moves the agents play
  until it is the person's turn again (as ``skyjo-play`` does in the terminal);
- ``watch``: agents hold every seat and play one decision per step;
- ``replay``: a move log (`agents.evaluation.replays`) stepped through.

Every session keeps the actions applied so far and a cursor, so a watched game or a
replay can be stepped back: the engine is deterministic given the deal seed and the
actions, and the position at any move is rebuilt by playing the actions again. The
views (`GameSession.view`) show what the viewer may know: in ``play`` mode, what the
person's seat sees (another seat's drawn card stays hidden); in ``watch`` and ``replay``
the card a seat holds too, and with ``peek`` the face-down cards.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.evaluation.games import AgentActionError, act_checked, agent_label
from agents.evaluation.replays import Replay
from skyjo_env.core import (
    ActionKind,
    Phase,
    SkyjoRules,
    decode_action,
    layout,
    legal_action_mask,
    new_batch,
    reset,
    step,
    winners,
)
from skyjo_env.core.engine import BatchState, illegal_action_reason
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import Agent

MODES = ("play", "watch", "replay")
#: Most moves a view lists (the latest ones).
VIEW_MOVES = 60
#: Most agent decisions one request may make (a whole official game takes a few hundred).
MAX_AGENT_DECISIONS = 20_000

_SLOT_STATES = {layout.HIDDEN: "hidden", layout.FACE_UP: "up", layout.CLEARED: "cleared"}


class GameError(ValueError):
    """A request the game cannot follow; ``field`` names the input at fault."""

    def __init__(self, message: str, field: str = "action", status: int = 400):
        super().__init__(message)
        self.field = field
        self.status = status


@dataclass
class SeatInfo:
    """Who holds a seat.

    Attributes:
        kind: ``human`` or ``agent``.
        spec: The spec as the request gave it (``you`` for the person).
        name: The agent's name.
        agent: The agent, or None for the person and for a replay's seats.
    """

    kind: str
    spec: str
    name: str
    agent: Agent | None = None


def phase_name(phase: int) -> str:
    """``choose_source`` for `Phase.CHOOSE_SOURCE`, etc."""
    return Phase(int(phase)).name.lower()


def slot_place(slot: int, rules: SkyjoRules) -> str:
    """``row 2, col 3`` (1-based) for a slot."""
    return f"row {slot // rules.cols + 1}, col {slot % rules.cols + 1}"


def action_text(action: int, rules: SkyjoRules, discard_top: int | None = None) -> str:
    """What an action does, in words (for menus and buttons)."""
    kind, slot = decode_action(action, rules.num_slots)
    where = "" if slot is None else slot_place(slot, rules)
    return {
        ActionKind.REVEAL: f"turn up the card at {where}",
        ActionKind.DRAW: "draw from the draw pile",
        ActionKind.TAKE_DISCARD: f"take the discard top ({discard_top})",
        ActionKind.PLACE: f"swap the held card into {where}",
        ActionKind.DISCARD_DRAWN: "discard the drawn card, then turn a card up",
    }[kind]


def describe_move(before: BatchState, after: BatchState, action: int) -> dict[str, Any]:
    """The public record of one move: who, what, and the cards it showed.

    Args:
        before: The game before the move.
        after: The game after it.
        action: The action applied.

    Returns:
        ``seat``, ``action``, ``kind``, ``slot`` (or None), ``card`` (the card the move
        showed, or None) and ``text``.
    """
    rules = before.rules
    seat = int(before.current_player[0])
    kind, slot = decode_action(action, rules.num_slots)
    card = None
    if kind == ActionKind.REVEAL:
        card = int(before.grid[0, seat, slot])
        text = f"turned up {card} at {slot_place(slot, rules)}"
    elif kind == ActionKind.DRAW:
        text = "drew from the draw pile"
    elif kind == ActionKind.TAKE_DISCARD:
        card = int(before.discard_pile_of(0)[-1])
        text = f"took the {card} from the discard pile"
    elif kind == ActionKind.PLACE:
        card = int(before.held_card[0])
        old = int(before.grid[0, seat, slot])
        text = f"placed {card} at {slot_place(slot, rules)}, discarding {old}"
    else:
        card = int(before.held_card[0])
        text = f"discarded the drawn {card}"
    if kind in (ActionKind.REVEAL, ActionKind.PLACE) and before.rounds_played[0] == \
            after.rounds_played[0]:
        cleared = int(((after.slot_state[0, seat] == layout.CLEARED)
                       & (before.slot_state[0, seat] != layout.CLEARED)).sum())
        if cleared:
            text += f"; {cleared} cards cleared"
    return {"seat": seat, "action": int(action), "kind": kind.name.lower(), "slot": slot,
            "card": card, "text": text}


def round_result(state: BatchState, round_number: int, move: int) -> dict[str, Any]:
    """The result of the round that just ended (the engine has dealt the next one).

    Args:
        state: The game right after the round-ending step.
        round_number: The ended round, 1-based.
        move: Number of moves played when it ended.
    """
    rules = state.rules
    grids = []
    for seat in range(rules.num_players):
        grids.append([
            {"state": _SLOT_STATES[int(s)], "value": int(v) if s != layout.CLEARED else None}
            for v, s in zip(state.final_grid[0, seat], state.final_slot_state[0, seat],
                            strict=True)
        ])
    scores = state.seat[0, :, layout.ROUND_SCORE].tolist()
    raw = state.seat[0, :, layout.RAW_SCORE].tolist()
    return {
        "round": round_number,
        "move": move,
        "finisher": int(state.game[0, layout.PREV_FINISHER]),
        "raw_scores": raw,
        "scores": scores,
        "penalised": [int(s) != int(r) for s, r in zip(scores, raw, strict=True)],
        "totals": state.seat[0, :, layout.TOTAL].tolist(),
        "grids": grids,
    }


@dataclass
class GameSession:
    """One game being played, watched or replayed.

    Attributes:
        id: Its id in URLs.
        mode: ``play``, ``watch`` or ``replay``.
        rules: The rules.
        preset: The rules preset the request named (or ``replay``).
        seed: The deal seed.
        seats: Who holds each seat.
        human_seat: The person's seat in ``play`` mode, else None.
        notices: Lines for the page (e.g. why the default agent is ``ev``).
        actions: Every action known so far (a replay's whole log).
        cursor: How many of ``actions`` the current state has applied.
        moves: The public record (`describe_move`) of each action played so far (a
            replay's whole log once opened).
        round_results: `round_result` of each ended round among the known actions.
        source: A replay's ``source`` field.
    """

    id: str
    mode: str
    rules: SkyjoRules
    preset: str
    seed: int
    seats: list[SeatInfo]
    human_seat: int | None = None
    notices: list[str] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    cursor: int = 0
    moves: list[dict[str, Any]] = field(default_factory=list)
    round_results: list[dict[str, Any]] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    last_used: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.state = self._fresh_state()
        self.encoder = ObservationEncoder(self.rules)

    def _fresh_state(self) -> BatchState:
        state = new_batch(self.rules, 1)
        reset(state, [self.seed])
        return state

    @property
    def over(self) -> bool:
        """Whether the game at the cursor has ended."""
        return bool(self.state.game_over[0])

    @property
    def current_seat(self) -> int:
        """The seat to act at the cursor."""
        return int(self.state.current_player[0])

    @property
    def live(self) -> bool:
        """Whether agents can extend the game past its known actions."""
        return self.mode != "replay"

    def legal_actions(self) -> np.ndarray:
        """The legal action ids at the cursor, int64 (n,)."""
        return np.flatnonzero(legal_action_mask(self.state)[0])

    def observation(self, seat: int) -> np.ndarray:
        """Seat ``seat``'s observation at the cursor, float32 (1, O)."""
        return self.encoder.encode(self.state, [seat])

    def apply(self, action: int) -> int:
        """Apply ``action`` at the cursor and advance it; returns the event bits.

        Past the known actions the action is appended (the history beyond the cursor
        must agree: stepping forward through a watched game replays it).

        Raises:
            GameError: The action is not legal here (the reason named).
        """
        mask = legal_action_mask(self.state)[0]
        if not 0 <= action < mask.size or not mask[action]:
            reason = illegal_action_reason(self.state, 0, int(action))
            raise GameError(f"action {action} is not legal now: {reason}")
        if self.cursor < len(self.actions) and self.actions[self.cursor] != action:
            raise GameError(f"move {self.cursor} is already {self.actions[self.cursor]}",
                            status=409)
        before = self.state.copy()
        rounds_before = int(before.rounds_played[0])
        events = int(step(self.state, np.array([action], np.int64))[0])
        if self.cursor == len(self.actions):
            self.actions.append(int(action))
        if self.cursor == len(self.moves):  # first time this move is played here
            self.moves.append({"index": self.cursor, "round": rounds_before + 1,
                               **describe_move(before, self.state, int(action))})
            if events & layout.EVENT_ROUND_ENDED:
                self.round_results.append(round_result(self.state, rounds_before + 1,
                                                       self.cursor + 1))
        self.cursor += 1
        return events

    def agent_action(self) -> int:
        """The action of the agent holding the seat to act.

        Raises:
            GameError: The seat has no agent (the person's, or a replay's).
            AgentActionError: The agent failed or chose an illegal action.
        """
        seat = self.current_seat
        info = self.seats[seat]
        if info.agent is None:
            raise GameError(f"seat {seat} is not played by an agent here", status=409)
        mask = legal_action_mask(self.state)
        label = f"{agent_label(info.name, info.spec)} at seat {seat}"
        return int(act_checked(info.agent, label, self.observation(seat), mask,
                               np.zeros(1, np.int64), self.state)[0])

    def play_agents(self, limit: int = MAX_AGENT_DECISIONS) -> int:
        """Let the agents play until the person's turn or the end; returns the count.

        Raises:
            AgentActionError: An agent failed.
        """
        played = 0
        while not self.over and self.current_seat != self.human_seat and played < limit:
            self.apply(self.agent_action())
            played += 1
        return played

    def human_move(self, action: int) -> None:
        """The person's move in ``play`` mode, then the agents' until the person's turn.

        Raises:
            GameError: Not a game the person plays, not the person's turn, the game is
                over, or an illegal action. AgentActionError: An agent failed.
        """
        if self.mode != "play":
            raise GameError(f"a {self.mode} game takes no moves from a person; use step",
                            field="mode", status=409)
        if self.over:
            raise GameError("the game is over", status=409)
        if self.current_seat != self.human_seat:
            raise GameError(f"it is seat {self.current_seat}'s turn, not yours", status=409)
        self.apply(int(action))
        self.play_agents()

    def advance(self, count: int) -> int:
        """Step ``count`` decisions forward in ``watch`` / ``replay`` mode (known actions
        first, then the agents' in a live game); returns how many were made.

        Raises:
            GameError: A ``play`` game. AgentActionError: An agent failed.
        """
        if self.mode == "play":
            raise GameError("a play game moves with your moves, not with step", field="mode",
                            status=409)
        made = 0
        while made < count and not self.over:
            if self.cursor < len(self.actions):
                self.apply(self.actions[self.cursor])
            elif self.live:
                self.apply(self.agent_action())
            else:
                break
            made += 1
        return made

    def seek(self, move: int) -> None:
        """Put the cursor at ``move`` (0..number of known actions) in ``watch`` /
        ``replay`` mode, replaying the known actions from the deal.

        Raises:
            GameError: A ``play`` game, or ``move`` out of range.
        """
        if self.mode == "play":
            raise GameError("a play game cannot be rewound", field="mode", status=409)
        if not 0 <= move <= len(self.actions):
            raise GameError(f"move must be in 0..{len(self.actions)}, got {move}", field="move")
        if move < self.cursor:
            self.state = self._fresh_state()
            self.cursor = 0
        while self.cursor < move:
            self.apply(self.actions[self.cursor])

    def to_replay(self) -> Replay:
        """The moves known so far as a `Replay` (totals only once the game is over)."""
        state = self._fresh_state()
        for action in self.actions:
            step(state, np.array([action], np.int64))
        over = bool(state.game_over[0])
        return Replay(
            rules=self.rules,
            seed=self.seed,
            seats=tuple((seat.name, seat.spec) for seat in self.seats),
            actions=tuple(self.actions),
            totals=tuple(int(t) for t in state.seat[0, :, layout.TOTAL]) if over else None,
            truncated=bool(state.truncated[0]),
            source={"skyjo_web_mode": self.mode, **self.source},
        )

    def view(self, peek: bool = False) -> dict[str, Any]:
        """The game at the cursor as the viewer may see it (see the module docstring).

        Args:
            peek: Show face-down cards (``watch`` and ``replay`` only).
        """
        state, rules = self.state, self.rules
        viewer = self.human_seat if self.mode == "play" else None
        peek = peek and self.mode != "play"
        phase = int(state.phase[0])
        current = self.current_seat
        held, held_from = None, None
        if phase in (Phase.PLACE_DRAWN, Phase.PLACE_DISCARD):
            held_from = "draw" if phase == Phase.PLACE_DRAWN else "discard"
            if held_from == "discard" or viewer is None or viewer == current:
                held = int(state.held_card[0])
        discard = state.discard_pile_of(0)
        known = self.moves[: self.cursor]
        last_move = {}
        for move in known:
            last_move[move["seat"]] = move
        seats = []
        for seat in range(rules.num_players):
            grid = []
            for slot in range(rules.num_slots):
                slot_state = int(state.slot_state[0, seat, slot])
                shown = slot_state == layout.FACE_UP or (peek and slot_state == layout.HIDDEN)
                grid.append({"slot": slot, "state": _SLOT_STATES[slot_state],
                             "value": int(state.grid[0, seat, slot]) if shown else None})
            up = state.slot_state[0, seat] == layout.FACE_UP
            info = self.seats[seat]
            seats.append({
                "seat": seat,
                "kind": info.kind,
                "spec": info.spec,
                "name": info.name,
                "total": int(state.seat[0, seat, layout.TOTAL]),
                "visible_sum": int(state.grid[0, seat][up].sum()),
                "grid": grid,
                "last_move": last_move.get(seat),
            })
        over = self.over
        your_turn = self.mode == "play" and not over and current == self.human_seat
        top = int(discard[-1]) if discard.size else None
        legal = []
        if your_turn:
            for action in self.legal_actions():
                kind, slot = decode_action(int(action), rules.num_slots)
                legal.append({"action": int(action), "kind": kind.name.lower(), "slot": slot,
                              "text": action_text(int(action), rules, top)})
        ended = [result for result in self.round_results if result["move"] <= self.cursor]
        return {
            "id": self.id,
            "mode": self.mode,
            "preset": self.preset,
            "rules": _rules_summary(rules),
            "seed": self.seed,
            "human_seat": self.human_seat,
            "seats": seats,
            "current_seat": None if over else current,
            "phase": phase_name(phase),
            "your_turn": your_turn,
            "held_card": held,
            "held_from": held_from,
            "discard_top": top,
            "discard_size": int(discard.size),
            "draw_size": int(state.draw_pile_of(0).size),
            "round": int(state.rounds_played[0]) + (0 if over else 1),
            "turn": int(state.game[0, layout.TURN]),
            "finisher": int(state.finisher[0]) if state.finisher[0] >= 0 else None,
            "legal": legal,
            "moves": known[-VIEW_MOVES:],
            "cursor": self.cursor,
            "known_moves": len(self.actions),
            "live": self.live,
            "round_results": ended,
            "over": over,
            "truncated": bool(state.truncated[0]),
            "winners": winners(state, 0) if over and not state.truncated[0] else [],
            "notices": self.notices,
            "source": self.source,
        }


def _rules_summary(rules: SkyjoRules) -> dict[str, Any]:
    return {
        "num_players": rules.num_players,
        "rows": rules.rows,
        "cols": rules.cols,
        "target_score": rules.target_score,
        "max_rounds": rules.max_rounds,
        "initial_reveals": rules.initial_reveals,
        "initial_reveal_mode": rules.initial_reveal_mode,
        "finisher_penalty_mode": rules.finisher_penalty_mode,
        "card_values": rules.card_values.tolist(),
    }


class TooManyGames(GameError):
    """The server holds as many games as it may."""


class GameStore:
    """The sessions of one server: capped in number, idle ones dropped after a while.

    Args:
        max_games: Most sessions held at once.
        idle_s: A session unused for this long is dropped when room is needed.
    """

    def __init__(self, max_games: int = 16, idle_s: float = 1800.0):
        self.max_games = max_games
        self.idle_s = idle_s
        self._games: dict[str, GameSession] = {}
        self._lock = threading.Lock()

    def new_id(self) -> str:
        """A fresh random session id (16 hex digits)."""
        return secrets.token_hex(8)

    def check_room(self) -> None:
        """Make room for one more session, dropping idle ones if the store is full (called
        before a session is built, so that a full server does no work for nothing).

        Raises:
            TooManyGames: Still full (status 429).
        """
        with self._lock:
            self._make_room()

    def _make_room(self) -> None:
        if len(self._games) >= self.max_games:
            now = time.monotonic()
            for key, game in list(self._games.items()):
                if now - game.last_used > self.idle_s and not game.lock.locked():
                    del self._games[key]
        if len(self._games) >= self.max_games:
            raise TooManyGames(
                f"this server already holds {self.max_games} games; delete one "
                "(DELETE /api/games/ID) or wait for idle ones to expire",
                field="games", status=429)

    def add(self, session: GameSession) -> None:
        """Keep ``session``, first dropping idle ones if the store is full.

        Raises:
            TooManyGames: Still full (status 429).
        """
        with self._lock:
            self._make_room()
            self._games[session.id] = session

    def get(self, game_id: str) -> GameSession:
        """The session ``game_id``.

        Raises:
            GameError: No such game (status 404).
        """
        with self._lock:
            session = self._games.get(game_id)
        if session is None:
            raise GameError(f"no game with id {game_id!r}", field="id", status=404)
        session.last_used = time.monotonic()
        return session

    def remove(self, game_id: str) -> None:
        """Drop the session ``game_id``.

        Raises:
            GameError: No such game (status 404).
        """
        with self._lock:
            if self._games.pop(game_id, None) is None:
                raise GameError(f"no game with id {game_id!r}", field="id", status=404)

    def __len__(self) -> int:
        return len(self._games)


__all__ = [
    "MAX_AGENT_DECISIONS",
    "MODES",
    "AgentActionError",
    "GameError",
    "GameSession",
    "GameStore",
    "SeatInfo",
    "TooManyGames",
    "action_text",
    "describe_move",
    "phase_name",
    "round_result",
]

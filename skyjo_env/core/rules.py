"""The rules config: every Skyjo variant as a field of one frozen, validated dataclass.

`SkyjoRules()` is the official game (Magilano, 2015). Presets live as YAML files under
`configs/rules/` and load by name with `load_rules("official")`. Every bad value raises
`ValueError` naming the field, the value and what is allowed (see `../shared/RULES.md` §1).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from skyjo_env.core.errors import shorten
from skyjo_env.core.safe_yaml import load_yaml_file, show_path

#: The official deck: value -> number of copies (150 cards, values summing to 760).
OFFICIAL_DECK: tuple[tuple[int, int], ...] = (
    (-2, 5),
    (-1, 10),
    (0, 15),
    *((value, 10) for value in range(1, 13)),
)

INITIAL_REVEAL_MODES = ("choice", "random")
NEXT_ROUND_STARTERS = ("previous_finisher", "highest_reveal_sum")
EMPTY_DRAW_PILE_MODES = ("reshuffle_keep_top", "reshuffle_all")
FINISHER_PENALTY_MODES = (
    "multiplier",
    "flat",
    "flat_then_multiplier",
    "multiplier_then_flat",
    "none",
)
FINISHER_PENALTY_CONDITIONS = ("other_le", "other_lt")

#: Grids are tracked as 64-bit masks inside the engine.
MAX_SLOTS = 64
#: Card values are stored as int16; this keeps every score sum far from overflow.
MAX_ABS_CARD_VALUE = 1000
#: Every game holds two piles of deck size per game in memory (int16), so a deck that
#: could not be allocated fails here, with a named error, rather than as a MemoryError.
MAX_DECK_SIZE = 10_000
#: Hard cap on rounds: a game ends (normally, lowest total wins) after this many rounds
#: even when `max_rounds` is None, so no deck can make a game endless (official games
#: last about 5-10 rounds). The observation bounds assume it too.
MAX_ROUNDS = 1000
#: Hard cap on turns in one round: with `max_turns_per_round` None, a round that reaches
#: it still truncates the game, so agents that never finish cannot hang a tournament.
MAX_TURNS_PER_ROUND = 100_000
#: The most characters of a bad value that an error message repeats.
VALUE_CHARS = 80
#: Totals are int32 in the engine.
_INT32_MAX = 2**31 - 1

PRESETS_DIR = Path(__file__).resolve().parents[2] / "configs" / "rules"


def _fail(field_name: str, value: Any, allowed: str) -> NoReturn:
    # the value is cut short: a rules file can hold a value of any size
    raise ValueError(f"SkyjoRules.{field_name}={shorten(repr(value), VALUE_CHARS)} is invalid: "
                     f"allowed {allowed}")


def _is_int(value: Any) -> bool:
    # bools are ints to Python, but True for a player count is a mistake, not a 1; floats
    # (even 3.0) and strings are refused rather than guessed at
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _as_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as a plain int in ``low..high``; numpy ints convert, so a uint8 field
    cannot wrap around in later arithmetic."""
    allowed = f"an int in {low}..{high}" if high is not None else f"an int >= {low}"
    if not _is_int(value) or value < low or (high is not None and value > high):
        _fail(name, value, allowed)
    return int(value)


def _as_optional_int(name: str, value: Any, low: int, high: int) -> int | None:
    if value is None:
        return None
    if not _is_int(value) or not low <= value <= high:
        _fail(name, value, f"None or an int in {low}..{high}")
    return int(value)


def _as_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        _fail(name, value, "true or false")
    return bool(value)


def _as_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        _fail(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return str(value)


def read_yaml_mapping(path: Path, what: str, entry: str) -> dict[str, Any]:
    """The mapping stored in the YAML file ``path`` (an empty file gives ``{}``), read
    with `skyjo_env.core.safe_yaml.load_yaml_file` (no aliases, bounded size and depth).

    Args:
        path: The file.
        what: What the file holds, for messages (``"rules file"``).
        entry: How an item is named in messages (``"field -> value"``).

    Raises:
        ValueError: The file is missing, unreadable, too large, is not valid YAML (a
            `YamlFileError`, one line with the line and column), or holds no mapping.
    """
    data = load_yaml_file(path, what)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(
            f"{what} {show_path(path)} must hold a mapping of {entry}, got {type(data).__name__}"
        )
    return data


def dataclass_from_dict(cls: type, data: Any, what: str, item: str):
    """``cls(**data)`` for a dataclass, refusing unknown keys.

    Args:
        cls: The dataclass.
        data: Its fields as a mapping.
        what: What ``data`` describes, for messages (``"rules"``).
        item: How a key is named in messages (``"field"``).

    Raises:
        ValueError: ``data`` is not a mapping, or names keys ``cls`` lacks (listed, with
            the known ones); the constructor's own validation errors pass through.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a mapping of {item} -> value, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"unknown {what} {item}(s) {shorten(repr(unknown), VALUE_CHARS)}; known {item}s: "
            f"{', '.join(sorted(known))}"
        )
    return cls(**data)


def normalize_deck(deck: Any) -> tuple[tuple[int, int], ...]:
    """Turn a deck given as a mapping or pairs into sorted ``((value, count), ...)``.

    Values and counts become plain ints (numpy ints convert; strings of digits are
    accepted as values, as YAML keys may be strings).

    Raises:
        ValueError: a value or count is not an int, a count is negative, the same value
            appears twice, a value lies outside ±MAX_ABS_CARD_VALUE, or the deck holds
            more than MAX_DECK_SIZE cards.
    """
    pairs_form = "a mapping value -> count or a list of (value, count) pairs"
    if isinstance(deck, dict):
        pairs = list(deck.items())
    else:
        try:
            pairs = [tuple(pair) for pair in deck]
        except TypeError:
            _fail("deck", deck, pairs_form)
    merged: dict[int, int] = {}
    for pair in pairs:
        if len(pair) != 2:
            _fail("deck", deck, pairs_form)
        value, count = pair
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                _fail("deck", deck,
                      f"integer card values (got {shorten(repr(value), VALUE_CHARS)})")
        for what, number in (("value", value), ("count", count)):
            if not _is_int(number):
                _fail("deck", deck,
                      f"integer card {what}s (got {shorten(repr(number), VALUE_CHARS)})")
        value, count = int(value), int(count)
        if abs(value) > MAX_ABS_CARD_VALUE:
            _fail("deck", deck, f"card values within ±{MAX_ABS_CARD_VALUE} (got {value})")
        if count < 0:
            _fail("deck", deck, f"non-negative counts (value {value} has {count})")
        if value in merged:
            _fail("deck", deck, f"each value once (value {value} repeats)")
        merged[value] = count
    size = sum(merged.values())
    if size > MAX_DECK_SIZE:
        _fail("deck", f"{size} cards", f"at most {MAX_DECK_SIZE} cards")
    return tuple(sorted((v, c) for v, c in merged.items() if c > 0))


@dataclass(frozen=True)
class SkyjoRules:
    """One Skyjo variant. Defaults are the official rules; see RULES.md §1 for each field.

    Attributes:
        num_players: Seats at the table, >= 2 (the published game: 2..8); more than 8 as
            long as the deck check passes (``num_players * rows * cols + 2`` cards).
        deck: Card value -> number of copies, stored as sorted ``(value, count)`` pairs.
        rows: Grid rows (>= 1).
        cols: Grid columns (>= 1); rows * cols must lie in 2..64.
        initial_reveals: Face-down cards each player turns up at the start of a round.
        initial_reveal_mode: ``choice`` (each seat picks, one card per decision, seats
            taking turns from seat 0) or ``random`` (slots drawn with the round's RNG).
        next_round_starter: Who starts rounds after the first: ``previous_finisher`` or
            ``highest_reveal_sum`` (the round-1 rule every round).
        column_elimination: A full face-up column of equal cards is removed.
        row_elimination: The same for rows.
        empty_draw_pile: ``reshuffle_keep_top`` (the discard pile below its top becomes
            the draw pile) or ``reshuffle_all`` (all of it, then a new top is flipped).
        final_reveal_elimination: Eliminations also apply at the end-of-round reveal.
        finisher_penalty_mode: ``multiplier``, ``flat``, ``flat_then_multiplier``,
            ``multiplier_then_flat`` or ``none``.
        finisher_multiplier: The multiplier m (>= 1).
        finisher_flat_penalty: The flat amount f (>= 0).
        finisher_penalty_condition: ``other_le`` (someone else scored <= the finisher) or
            ``other_lt`` (someone else scored strictly less).
        finisher_penalty_only_if_positive: Penalise only a finisher whose raw score is > 0.
        target_score: The game ends after the round in which a total reaches this.
        max_rounds: Optional cap on rounds (1..MAX_ROUNDS); the game then ends normally
            (lowest total wins). None still ends a game after MAX_ROUNDS = 1000 rounds.
        max_turns_per_round: Optional cap on turns in one round (1..MAX_TURNS_PER_ROUND);
            reaching it truncates the game (the round is not scored). None still
            truncates at MAX_TURNS_PER_ROUND = 100000 turns.

    Every field is stored as a plain Python value (numpy ints and bools convert). Ints
    refuse bools, floats (even 3.0) and strings. Rules under which no total can reach
    ``target_score`` (no card > 0) need a ``max_rounds``, and decks hold at most
    MAX_DECK_SIZE cards.
    """

    num_players: int = 2
    deck: tuple[tuple[int, int], ...] = field(default=OFFICIAL_DECK)
    rows: int = 3
    cols: int = 4
    initial_reveals: int = 2
    initial_reveal_mode: str = "choice"
    next_round_starter: str = "previous_finisher"
    column_elimination: bool = True
    row_elimination: bool = False
    empty_draw_pile: str = "reshuffle_keep_top"
    final_reveal_elimination: bool = True
    finisher_penalty_mode: str = "multiplier"
    finisher_multiplier: int = 2
    finisher_flat_penalty: int = 0
    finisher_penalty_condition: str = "other_le"
    finisher_penalty_only_if_positive: bool = True
    target_score: int = 100
    max_rounds: int | None = None
    max_turns_per_round: int | None = 1000

    def __post_init__(self) -> None:
        # every field is stored as a plain Python value (numpy scalars convert), so no
        # later arithmetic on the rules can wrap around
        def store(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        store("deck", normalize_deck(self.deck))
        store("num_players", _as_int("num_players", self.num_players, 2))
        store("rows", _as_int("rows", self.rows, 1))
        store("cols", _as_int("cols", self.cols, 1))
        if not 2 <= self.rows * self.cols <= MAX_SLOTS:
            _fail("rows", self.rows, f"rows * cols in 2..{MAX_SLOTS} (cols={self.cols})")
        store(
            "initial_reveals",
            _as_int("initial_reveals", self.initial_reveals, 0, self.num_slots - 1),
        )
        for name, choices in (
            ("initial_reveal_mode", INITIAL_REVEAL_MODES),
            ("next_round_starter", NEXT_ROUND_STARTERS),
            ("empty_draw_pile", EMPTY_DRAW_PILE_MODES),
            ("finisher_penalty_mode", FINISHER_PENALTY_MODES),
            ("finisher_penalty_condition", FINISHER_PENALTY_CONDITIONS),
        ):
            store(name, _as_choice(name, getattr(self, name), choices))
        for name in (
            "column_elimination",
            "row_elimination",
            "final_reveal_elimination",
            "finisher_penalty_only_if_positive",
        ):
            store(name, _as_bool(name, getattr(self, name)))
        # upper bounds keep every total far inside the engine's int32 scores
        store(
            "finisher_multiplier", _as_int("finisher_multiplier", self.finisher_multiplier, 1, 100)
        )
        store(
            "finisher_flat_penalty",
            _as_int("finisher_flat_penalty", self.finisher_flat_penalty, 0, 10_000),
        )
        store("target_score", _as_int("target_score", self.target_score, 1, 1_000_000))
        store("max_rounds", _as_optional_int("max_rounds", self.max_rounds, 1, MAX_ROUNDS))
        store(
            "max_turns_per_round",
            _as_optional_int(
                "max_turns_per_round", self.max_turns_per_round, 1, MAX_TURNS_PER_ROUND
            ),
        )
        needed = self.num_players * self.num_slots + 2
        if self.deck_size < needed:
            _fail(
                "deck",
                f"{self.deck_size} cards",
                f"at least num_players * rows * cols + 2 = {self.num_players} * {self.rows} * "
                f"{self.cols} + 2 = {needed} cards",
            )
        self._check_game_can_end()
        self._check_totals_fit_int32()

    def _check_game_can_end(self) -> None:
        """Refuse rules under which no total can ever reach the target.

        A total grows only by positive round scores, and a round score can be positive
        only through a card > 0 or a flat finisher penalty charged on a score <= 0 (the
        multiplier keeps the sign). Without either, only `max_rounds` (or the hard
        `MAX_ROUNDS` cap) could end the game, so that must be asked for explicitly.
        """
        if self.max_rounds is not None or self.card_values.max() > 0:
            return
        flat_applies = (
            self.finisher_flat_penalty > 0
            and not self.finisher_penalty_only_if_positive
            and self.finisher_penalty_mode not in ("multiplier", "none")
        )
        if not flat_applies:
            _fail(
                "deck",
                dict(self.deck),
                "a card > 0 or a max_rounds: with no card > 0 (and no flat finisher penalty "
                f"on scores <= 0) no total can reach target_score={self.target_score}",
            )

    def _check_totals_fit_int32(self) -> None:
        """Refuse decks and multipliers whose totals could leave int32 within the rounds
        a game may last (only extreme custom rules come near this)."""
        worst_round = self.num_slots * int(self.card_values.min()) * self.finisher_multiplier
        if worst_round >= 0:
            return
        rounds_allowed = _INT32_MAX // -worst_round
        rounds = self.max_rounds if self.max_rounds is not None else MAX_ROUNDS
        if rounds > rounds_allowed:
            _fail(
                "max_rounds",
                self.max_rounds,
                f"an int in 1..{rounds_allowed} with this deck, grid and finisher_multiplier "
                f"(a round can score {worst_round}; totals are int32)",
            )

    @property
    def num_slots(self) -> int:
        """Slots in one grid (rows * cols)."""
        return self.rows * self.cols

    @property
    def deck_size(self) -> int:
        """Number of cards in the deck."""
        return sum(count for _, count in self.deck)

    @property
    def card_values(self) -> np.ndarray:
        """Distinct card values in increasing order, int16 array of shape (V,)."""
        return np.array([value for value, _ in self.deck], dtype=np.int16)

    @property
    def card_counts(self) -> np.ndarray:
        """Copies of each value in `card_values`, int32 array of shape (V,)."""
        return np.array([count for _, count in self.deck], dtype=np.int32)

    def deck_array(self) -> np.ndarray:
        """Every card of the deck in increasing value order, int16 array of shape (D,)."""
        return np.repeat(self.card_values, self.card_counts)

    def replace(self, **changes: Any) -> SkyjoRules:
        """A copy with some fields changed (validated like the constructor)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (the deck as a value -> count mapping), as written in YAML."""
        data = dataclasses.asdict(self)
        data["deck"] = {value: count for value, count in self.deck}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SkyjoRules:
        """Build from plain data; unknown keys raise `ValueError` naming them."""
        return dataclass_from_dict(cls, data, "rules", "field")


def available_presets() -> list[str]:
    """Names of the rules presets shipped under `configs/rules/`."""
    return sorted(path.stem for path in PRESETS_DIR.glob("*.yaml"))


def load_rules(name_or_path: str | Path, **overrides: Any) -> SkyjoRules:
    """Load a rules preset by name (``official``) or from a YAML file path.

    Args:
        name_or_path: A preset name from `available_presets()` or a path to a YAML file
            whose keys are `SkyjoRules` fields.
        **overrides: Fields to change after loading (e.g. ``num_players=4``).

    Raises:
        ValueError: Unknown preset, unreadable YAML, unknown field or bad value.
    """
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = PRESETS_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            raise ValueError(
                f"unknown rules preset {show_path(name_or_path)}; "
                f"available: {', '.join(available_presets())}"
            )
    data = read_yaml_mapping(path, "rules file", "field -> value")
    data.update(overrides)
    return SkyjoRules.from_dict(data)

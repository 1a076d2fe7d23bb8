"""The rules config: every Skyjo variant as a field of one frozen, validated dataclass.

`SkyjoRules()` is the official game (Magilano, 2015). Presets live as YAML files under
`configs/rules/` and load by name with `load_rules("official")`. Every bad value raises
`ValueError` naming the field, the value and what is allowed (see `../shared/RULES.md` §1).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

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

MAX_PLAYERS = 8
#: Grids are tracked as 64-bit masks inside the engine.
MAX_SLOTS = 64
#: Card values are stored as int16; this keeps every score sum far from overflow.
MAX_ABS_CARD_VALUE = 1000

PRESETS_DIR = Path(__file__).resolve().parents[2] / "configs" / "rules"


def _fail(field_name: str, value: Any, allowed: str) -> None:
    raise ValueError(f"SkyjoRules.{field_name}={value!r} is invalid: allowed {allowed}")


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> None:
    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    allowed = f"an int in {low}..{high}" if high is not None else f"an int >= {low}"
    if not is_int or value < low or (high is not None and value > high):
        _fail(name, value, allowed)


def _check_optional_int(name: str, value: Any, low: int) -> None:
    if value is not None:
        is_int = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        if not is_int or value < low:
            _fail(name, value, f"None or an int >= {low}")


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        _fail(name, value, "true or false")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        _fail(name, value, "one of " + ", ".join(repr(c) for c in choices))


def read_yaml_mapping(path: Path, what: str, entry: str) -> dict[str, Any]:
    """The mapping stored in the YAML file ``path`` (an empty file gives ``{}``).

    Args:
        path: The file.
        what: What the file holds, for messages (``"rules file"``).
        entry: How an item is named in messages (``"field -> value"``).

    Raises:
        ValueError: The file is missing, is not valid YAML, or holds no mapping.
    """
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ValueError(f"{what} {str(path)!r} is not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(
            f"{what} {str(path)!r} must hold a mapping of {entry}, got {type(data).__name__}"
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
            f"unknown {what} {item}(s) {unknown}; known {item}s: {', '.join(sorted(known))}"
        )
    return cls(**data)


def normalize_deck(deck: Any) -> tuple[tuple[int, int], ...]:
    """Turn a deck given as a mapping or pairs into sorted ``((value, count), ...)``.

    Raises:
        ValueError: a value or count is not an int, a count is negative, the same value
            appears twice, or a value lies outside ±MAX_ABS_CARD_VALUE.
    """
    if isinstance(deck, dict):
        pairs = list(deck.items())
    else:
        try:
            pairs = [tuple(pair) for pair in deck]
        except TypeError:
            _fail("deck", deck, "a mapping value -> count or a list of (value, count) pairs")
    merged: dict[int, int] = {}
    for pair in pairs:
        if len(pair) != 2:
            _fail("deck", deck, "a mapping value -> count or a list of (value, count) pairs")
        value, count = pair
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                _fail("deck", deck, f"integer card values (got {value!r})")
        for what, number in (("value", value), ("count", count)):
            if not isinstance(number, (int, np.integer)) or isinstance(number, bool):
                _fail("deck", deck, f"integer card {what}s (got {number!r})")
        if abs(value) > MAX_ABS_CARD_VALUE:
            _fail("deck", deck, f"card values within ±{MAX_ABS_CARD_VALUE} (got {value})")
        if count < 0:
            _fail("deck", deck, f"non-negative counts (value {value} has {count})")
        if int(value) in merged:
            _fail("deck", deck, f"each value once (value {value} repeats)")
        merged[int(value)] = int(count)
    return tuple(sorted((v, c) for v, c in merged.items() if c > 0))


@dataclass(frozen=True)
class SkyjoRules:
    """One Skyjo variant. Defaults are the official rules; see RULES.md §1 for each field.

    Attributes:
        num_players: Seats at the table, 2..8.
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
        max_rounds: Optional cap on rounds; the game then ends normally (lowest total wins).
        max_turns_per_round: Optional cap on turns in one round; reaching it truncates the
            game (the round is not scored).
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
        object.__setattr__(self, "deck", normalize_deck(self.deck))
        _check_int("num_players", self.num_players, 2, MAX_PLAYERS)
        _check_int("rows", self.rows, 1)
        _check_int("cols", self.cols, 1)
        if not 2 <= self.rows * self.cols <= MAX_SLOTS:
            _fail("rows", self.rows, f"rows * cols in 2..{MAX_SLOTS} (cols={self.cols})")
        _check_int("initial_reveals", self.initial_reveals, 0, self.num_slots - 1)
        _check_choice("initial_reveal_mode", self.initial_reveal_mode, INITIAL_REVEAL_MODES)
        _check_choice("next_round_starter", self.next_round_starter, NEXT_ROUND_STARTERS)
        _check_bool("column_elimination", self.column_elimination)
        _check_bool("row_elimination", self.row_elimination)
        _check_choice("empty_draw_pile", self.empty_draw_pile, EMPTY_DRAW_PILE_MODES)
        _check_bool("final_reveal_elimination", self.final_reveal_elimination)
        _check_choice("finisher_penalty_mode", self.finisher_penalty_mode, FINISHER_PENALTY_MODES)
        # upper bounds keep every total far inside the engine's int32 scores
        _check_int("finisher_multiplier", self.finisher_multiplier, 1, 100)
        _check_int("finisher_flat_penalty", self.finisher_flat_penalty, 0, 10_000)
        _check_choice(
            "finisher_penalty_condition",
            self.finisher_penalty_condition,
            FINISHER_PENALTY_CONDITIONS,
        )
        _check_bool("finisher_penalty_only_if_positive", self.finisher_penalty_only_if_positive)
        _check_int("target_score", self.target_score, 1, 1_000_000)
        _check_optional_int("max_rounds", self.max_rounds, 1)
        _check_optional_int("max_turns_per_round", self.max_turns_per_round, 1)
        needed = self.num_players * self.num_slots + 2
        if self.deck_size < needed:
            _fail(
                "deck",
                f"{self.deck_size} cards",
                f"at least num_players * rows * cols + 2 = {needed} cards",
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
                f"unknown rules preset {str(name_or_path)!r}; "
                f"available: {', '.join(available_presets())}"
            )
    data = read_yaml_mapping(path, "rules file", "field -> value")
    data.update(overrides)
    return SkyjoRules.from_dict(data)

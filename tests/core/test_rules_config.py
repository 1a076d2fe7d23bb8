"""SkyjoRules validation, presets and (de)serialisation (RULES.md §1)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import yaml

from skyjo_env.core import layout
from skyjo_env.core.engine import rules_params
from skyjo_env.core.rules import (
    MAX_ROUNDS,
    MAX_TURNS_PER_ROUND,
    OFFICIAL_DECK,
    SkyjoRules,
    available_presets,
    load_rules,
)

# (field, bad value, text that the allowed part of the message must contain)
BAD_VALUES = [
    ("num_players", 1, ">= 2"),
    ("num_players", 2.0, ">= 2"),
    ("num_players", True, ">= 2"),
    ("num_players", "2", ">= 2"),
    ("rows", 0, ">= 1"),
    ("rows", -3, ">= 1"),
    ("cols", 0, ">= 1"),
    ("initial_reveals", -1, "0..11"),
    ("initial_reveals", 12, "0..11"),
    ("initial_reveal_mode", "pick", "'choice', 'random'"),
    ("next_round_starter", "loser", "'previous_finisher', 'highest_reveal_sum'"),
    ("column_elimination", 1, "true or false"),
    ("row_elimination", "yes", "true or false"),
    ("empty_draw_pile", "lose_cards", "'reshuffle_keep_top', 'reshuffle_all'"),
    ("final_reveal_elimination", None, "true or false"),
    ("finisher_penalty_mode", "double", "'multiplier', 'flat'"),
    ("finisher_multiplier", 0, "1..100"),
    ("finisher_multiplier", 101, "1..100"),
    ("finisher_flat_penalty", -1, "0..10000"),
    ("finisher_penalty_condition", "other_ge", "'other_le', 'other_lt'"),
    ("finisher_penalty_only_if_positive", 0, "true or false"),
    ("target_score", 0, "1..1000000"),
    ("target_score", 50.5, "1..1000000"),
    ("max_rounds", 0, "None or an int in 1..1000"),
    ("max_rounds", 1001, "None or an int in 1..1000"),
    ("max_rounds", True, "None or an int in 1..1000"),
    ("max_turns_per_round", -5, "None or an int in 1..100000"),
    ("max_turns_per_round", 10.0, "None or an int in 1..100000"),
    ("max_turns_per_round", 100_001, "None or an int in 1..100000"),
    # bools, floats (even integral ones) and strings are refused for int fields
    ("rows", True, ">= 1"),
    ("rows", 3.0, ">= 1"),
    ("cols", "4", ">= 1"),
    ("initial_reveals", np.True_, "0..11"),
    ("finisher_multiplier", np.float64(2.0), "1..100"),
    ("initial_reveal_mode", 1, "'choice', 'random'"),
    ("column_elimination", np.int64(1), "true or false"),
]


@pytest.mark.parametrize(("field", "value", "allowed"), BAD_VALUES)
def test_skyjo_rules__bad_value_raises_naming_field_value_and_range(field, value, allowed):
    with pytest.raises(ValueError) as info:
        SkyjoRules(**{field: value})
    message = str(info.value)
    assert f"SkyjoRules.{field}={value!r}" in message
    assert "allowed" in message
    assert allowed in message


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (8, 9), (65, 1)])
def test_skyjo_rules__grid_size_outside_2_to_64_slots_is_rejected(rows, cols):
    with pytest.raises(ValueError, match=r"rows \* cols in 2\.\.64"):
        SkyjoRules(rows=rows, cols=cols, initial_reveals=0, num_players=2, deck={1: 10_000})


def test_skyjo_rules__initial_reveals_range_follows_the_grid_size():
    assert SkyjoRules(rows=2, cols=3, initial_reveals=5).initial_reveals == 5
    with pytest.raises(ValueError, match=r"initial_reveals=6 .*0\.\.5"):
        SkyjoRules(rows=2, cols=3, initial_reveals=6)


def test_skyjo_rules__optional_caps_accept_none():
    rules = SkyjoRules(max_rounds=None, max_turns_per_round=None)
    assert rules.max_rounds is None
    assert rules.max_turns_per_round is None
    assert SkyjoRules(max_rounds=np.int64(3)).max_rounds == 3


def test_skyjo_rules__defaults_are_the_official_game():
    rules = SkyjoRules()
    assert rules.num_players == 2
    assert (rules.rows, rules.cols, rules.num_slots) == (3, 4, 12)
    assert rules.deck_size == 150
    assert int(rules.deck_array().sum()) == 760
    assert dict(rules.deck) == {-2: 5, -1: 10, 0: 15, **{v: 10 for v in range(1, 13)}}
    assert rules.initial_reveals == 2
    assert rules.initial_reveal_mode == "choice"
    assert rules.next_round_starter == "previous_finisher"
    assert rules.column_elimination and not rules.row_elimination
    assert rules.empty_draw_pile == "reshuffle_keep_top"
    assert rules.final_reveal_elimination
    assert rules.finisher_penalty_mode == "multiplier"
    assert (rules.finisher_multiplier, rules.finisher_flat_penalty) == (2, 0)
    assert rules.finisher_penalty_condition == "other_le"
    assert rules.finisher_penalty_only_if_positive
    assert rules.target_score == 100
    assert rules.max_rounds is None
    assert rules.max_turns_per_round == 1000


def test_skyjo_rules__deck_smaller_than_players_times_slots_plus_two_is_rejected():
    # 2 players x 12 slots + 2 = 26 cards needed
    assert SkyjoRules(deck={1: 26}).deck_size == 26
    with pytest.raises(ValueError, match=r"SkyjoRules\.deck='25 cards'.*26 cards"):
        SkyjoRules(deck={1: 25})
    # 8 players on 4x5 grids need 162 > 150 official cards
    with pytest.raises(ValueError, match=r"162 cards"):
        SkyjoRules(num_players=8, rows=4, cols=5)
    # 8 players on the official grid need 98 <= 150
    assert SkyjoRules(num_players=8).num_players == 8


def test_skyjo_rules__more_than_eight_players_while_the_deck_holds_enough_cards():
    # RULES.md §1: 2..8, more only if the deck check passes; 12 * 12 + 2 = 146 <= 150
    assert SkyjoRules(num_players=12).num_players == 12
    with pytest.raises(ValueError, match=r"13 \* 3 \* 4 \+ 2 = 158 cards"):
        SkyjoRules(num_players=13)
    assert SkyjoRules(num_players=20, deck={**dict(OFFICIAL_DECK), 5: 100, 6: 100}).num_players == 20


@pytest.mark.parametrize(
    ("deck", "fragment"),
    [
        ({1: -1, 2: 40}, "non-negative counts"),
        ({1.5: 40}, "integer card values"),
        ({1: 40.0}, "integer card counts"),
        ({"x": 40}, "integer card values"),
        ({"1": 20, 1: 20}, "each value once"),
        ({5000: 40}, "card values within"),
        ([(1, 2, 3)], "a mapping value -> count"),
        (None, "a mapping value -> count"),
    ],
)
def test_skyjo_rules__malformed_deck_is_rejected(deck, fragment):
    with pytest.raises(ValueError, match="SkyjoRules.deck=") as info:
        SkyjoRules(deck=deck)
    assert fragment in str(info.value)


def test_skyjo_rules__deck_forms_normalise_to_sorted_pairs_without_empty_values():
    as_map = SkyjoRules(deck={3: 10, "-1": 10, 0: 0, 7: 10})
    as_pairs = SkyjoRules(deck=[(7, 10), (3, 10), (-1, 10)])
    assert as_map == as_pairs
    assert as_map.deck == ((-1, 10), (3, 10), (7, 10))
    assert as_map.card_values.tolist() == [-1, 3, 7]
    assert as_map.card_values.dtype == np.int16
    assert as_map.card_counts.tolist() == [10, 10, 10]
    assert as_map.deck_array().tolist() == [-1] * 10 + [3] * 10 + [7] * 10


def test_skyjo_rules__is_frozen_and_replace_revalidates():
    rules = SkyjoRules()
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.num_players = 3
    assert rules.replace(num_players=4).num_players == 4
    assert rules.num_players == 2
    with pytest.raises(ValueError, match="num_players=0"):
        rules.replace(num_players=0)


def test_load_rules__official_preset_equals_defaults():
    assert load_rules("official") == SkyjoRules()


def test_load_rules__online_preset_loads_its_variant():
    rules = load_rules("online")
    assert rules != SkyjoRules()
    assert rules.row_elimination
    assert rules.finisher_penalty_mode == "flat_then_multiplier"
    assert rules.finisher_flat_penalty == 10
    assert rules.deck == OFFICIAL_DECK


def test_available_presets__lists_the_shipped_yaml_files():
    assert {"official", "online"} <= set(available_presets())


def test_load_rules__overrides_apply_and_are_validated():
    assert load_rules("official", num_players=4, row_elimination=True) == SkyjoRules(
        num_players=4, row_elimination=True
    )
    with pytest.raises(ValueError, match="num_players=1 "):
        load_rules("official", num_players=1)
    with pytest.raises(ValueError, match=r"13 \* 3 \* 4 \+ 2 = 158 cards"):
        load_rules("official", num_players=13)


def test_load_rules__unknown_preset_names_it_and_lists_presets():
    with pytest.raises(ValueError, match=r"unknown rules preset 'tournament'.*official"):
        load_rules("tournament")


def test_load_rules__unknown_key_names_it(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("num_player: 3\nrows: 3\n")
    with pytest.raises(ValueError, match=r"unknown rules field\(s\) \['num_player'\]"):
        load_rules(path)


def test_load_rules__invalid_yaml_is_a_value_error(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("rows: [3, 4\ncols: 4\n")
    with pytest.raises(ValueError, match="is not valid YAML"):
        load_rules(path)


@pytest.mark.parametrize("text", ["- rows\n- cols\n", "just a string\n", "42\n"])
def test_load_rules__yaml_that_is_not_a_mapping_is_a_value_error(tmp_path, text):
    path = tmp_path / "list.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match="mapping"):
        load_rules(path)


def test_load_rules__bad_value_in_file_names_the_field(tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text("finisher_multiplier: 0\n")
    with pytest.raises(ValueError, match=re.escape("SkyjoRules.finisher_multiplier=0")):
        load_rules(path)


def test_load_rules__missing_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_rules(tmp_path / "absent.yaml")


def test_load_rules__empty_file_gives_defaults(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_rules(path) == SkyjoRules()


def test_skyjo_rules_from_dict__rejects_non_mapping():
    with pytest.raises(ValueError, match="mapping"):
        SkyjoRules.from_dict([("rows", 3)])


@pytest.mark.parametrize(
    "rules",
    [
        SkyjoRules(),
        load_rules("online"),
        SkyjoRules(
            num_players=5,
            deck={-5: 10, 0: 40, 9: 30},
            rows=2,
            cols=5,
            initial_reveals=0,
            next_round_starter="highest_reveal_sum",
            column_elimination=False,
            row_elimination=True,
            finisher_penalty_mode="multiplier_then_flat",
            finisher_multiplier=3,
            finisher_flat_penalty=7,
            finisher_penalty_condition="other_lt",
            target_score=50,
            max_rounds=4,
            max_turns_per_round=None,
        ),
    ],
    ids=["official", "online", "custom"],
)
def test_skyjo_rules__to_dict_from_dict_and_yaml_round_trip(rules, tmp_path):
    data = rules.to_dict()
    assert isinstance(data["deck"], dict)
    assert set(data) == {f.name for f in dataclasses.fields(SkyjoRules)}
    assert SkyjoRules.from_dict(data) == rules
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(data))
    assert load_rules(path) == rules


# ---------------------------------------------------------------- plain values, safe rules


def test_skyjo_rules__numpy_scalars_are_stored_as_plain_python_values():
    rules = SkyjoRules(
        num_players=np.uint8(3),
        rows=np.uint8(3),
        cols=np.int16(4),
        initial_reveals=np.int64(2),
        deck={np.int8(v): np.uint8(c) for v, c in OFFICIAL_DECK},
        column_elimination=np.True_,
        initial_reveal_mode=np.str_("random"),
        target_score=np.uint32(100),
        max_rounds=np.int32(5),
    )
    assert rules == SkyjoRules(num_players=3, initial_reveal_mode="random", max_rounds=5)
    for name in ("num_players", "rows", "cols", "initial_reveals", "target_score", "max_rounds"):
        assert type(getattr(rules, name)) is int, name
    assert type(rules.column_elimination) is bool
    assert type(rules.initial_reveal_mode) is str
    assert all(type(v) is int and type(c) is int for v, c in rules.deck)
    assert hash(rules) == hash(
        SkyjoRules(num_players=3, initial_reveal_mode="random", max_rounds=5)
    )


def test_skyjo_rules__uint8_fields_cannot_wrap_around_the_deck_size_check():
    # 8 players x 8 x 8 slots need 514 cards; in uint8 arithmetic 514 wraps to 2, which
    # the 150 official cards used to pass (and the kernels then read out of bounds)
    with pytest.raises(ValueError, match=r"SkyjoRules\.deck='150 cards'.*514 cards"):
        SkyjoRules(num_players=np.uint8(8), rows=np.uint8(8), cols=np.uint8(8))


@pytest.mark.parametrize("count", [10**12, np.uint64(2**63), 10_001])
def test_skyjo_rules__deck_larger_than_the_maximum_is_rejected_before_allocating(count):
    with pytest.raises(ValueError, match=r"SkyjoRules\.deck='\d+ cards'.*at most 10000 cards"):
        SkyjoRules(deck={1: count})
    assert SkyjoRules(deck={1: 10_000}).deck_size == 10_000


@pytest.mark.parametrize("deck", [{-2: 20, -1: 20}, {0: 40}, {-2: 10, 0: 30}])
def test_skyjo_rules__deck_without_a_positive_card_needs_max_rounds(deck):
    # no round score can be positive, so no total would ever reach the target
    with pytest.raises(ValueError) as info:
        SkyjoRules(deck=deck)
    message = str(info.value)
    assert message.startswith(f"SkyjoRules.deck={deck!r} is invalid: allowed a card > 0")
    assert "target_score=100" in message and "\n" not in message
    assert SkyjoRules(deck=deck, max_rounds=10).max_rounds == 10


def test_skyjo_rules__flat_penalty_on_non_positive_scores_can_end_a_game():
    # a finisher scoring 0 is charged 0 + 5: totals can grow without a positive card
    flat = dict(finisher_penalty_mode="flat", finisher_flat_penalty=5)
    assert SkyjoRules(deck={0: 40}, finisher_penalty_only_if_positive=False, **flat)
    with pytest.raises(ValueError, match=r"SkyjoRules\.deck="):
        SkyjoRules(deck={0: 40}, finisher_penalty_only_if_positive=True, **flat)
    with pytest.raises(ValueError, match=r"SkyjoRules\.deck="):
        SkyjoRules(deck={0: 40}, finisher_penalty_only_if_positive=False)  # multiplier


def test_skyjo_rules__totals_that_could_overflow_int32_are_rejected():
    # a round can score 64 * -1000 * 100 = -6,400,000: 335 rounds fit in int32, 1000 do not
    extreme = dict(
        deck={-1000: 200, 1: 10}, rows=8, cols=8, finisher_multiplier=100, initial_reveals=0
    )
    with pytest.raises(ValueError) as info:
        SkyjoRules(**extreme)
    assert str(info.value).startswith(
        "SkyjoRules.max_rounds=None is invalid: allowed an int in 1..335"
    )
    assert SkyjoRules(**extreme, max_rounds=335).max_rounds == 335
    with pytest.raises(ValueError, match=r"max_rounds=336 .*1\.\.335"):
        SkyjoRules(**extreme, max_rounds=336)


def test_rules_params__none_caps_become_the_hard_caps():
    params = rules_params(SkyjoRules(max_rounds=None, max_turns_per_round=None))
    assert params[layout.P_MAX_ROUNDS] == MAX_ROUNDS == 1000
    assert params[layout.P_MAX_TURNS] == MAX_TURNS_PER_ROUND == 100_000
    params = rules_params(SkyjoRules(max_rounds=7, max_turns_per_round=50))
    assert (params[layout.P_MAX_ROUNDS], params[layout.P_MAX_TURNS]) == (7, 50)

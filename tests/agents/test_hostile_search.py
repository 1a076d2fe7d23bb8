"""Hostile inputs of issue #34 part C: search settings bounded, a decision's rollouts split
at ``max_rollout_games``, nested searches refused, ``evaluate --resume`` directories
checked (checksums, types, foreign directories), the ``skyjo-play`` prompt, and the
one-line wrapping of agents' errors."""

from __future__ import annotations

import itertools
import json
import time

import numpy as np
import pytest

from agents.cli.evaluate import main as evaluate_main
from agents.cli.play import main as play_main
from agents.cli.play import parse_choice
from agents.evaluation.games import GameRecords, play_deals
from agents.evaluation.resume import ChunkStore, ResumeError, tournament_identity
from agents.registry import MAX_SPEC_LENGTH, AgentSpecError, make_agent
from agents.search import OPTION_LIMITS, SearchAgent, SearchOptionError, SearchOptions
from skyjo_env.core import legal_action_mask, new_batch, reset, step
from skyjo_env.core.errors import ONE_LINE_LIMIT
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder

# --- search settings -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OPTION_LIMITS))
def test_search_options__above_the_limit_is_refused_naming_the_option(name):
    limit = OPTION_LIMITS[name]
    over = limit * 10 if isinstance(limit, float) else limit + 1
    with pytest.raises(SearchOptionError, match=f"search option {name} must be at most"):
        SearchOptions(**{name: over})
    SearchOptions(**{name: limit})  # the limit itself is allowed


def test_make_agent__samples_of_fifty_thousand_is_one_line():
    with pytest.raises(AgentSpecError) as error:
        make_agent("search(samples=50000,depth=1,max_rollout_games=100):ev", SkyjoRules(), 0)
    assert "samples must be at most 10,000, got 50000" in str(error.value)


def test_make_agent__a_huge_option_number_is_shown_short():
    with pytest.raises(AgentSpecError) as error:
        make_agent(f"search(samples={'9' * 900}):ev", SkyjoRules(), 0)
    assert "an int of 900 digits" in str(error.value)


def _searched_rows(rows=1):
    """``rows`` decisions of a game ``ev`` plays against itself, each with six or more
    legal actions: (rules, observations float32 (rows, O), masks bool (rows, A))."""
    rules = SkyjoRules()
    ev, encoder = make_agent("ev", rules, 3), ObservationEncoder(rules)
    state = new_batch(rules, 1)
    reset(state, np.random.default_rng(3))
    seen_observations, seen_masks = [], []
    for turn in range(60):
        masks = legal_action_mask(state)
        observations = encoder.encode(state, state.current_player)
        if turn >= 10 and masks.sum() >= 6:  # a placement: many actions
            seen_observations.append(observations)
            seen_masks.append(masks)
        step(state, ev.act(observations, masks))
    return (rules, np.concatenate(seen_observations)[:rows],
            np.concatenate(seen_masks)[:rows])


def _batch_sizes(monkeypatch) -> list[int]:
    """The batch size of every rollout `SearchAgent` plays from now on."""
    sizes: list[int] = []
    real = SearchAgent._rollout

    def counted(self, state, first_actions):
        sizes.append(state.batch_size)
        return real(self, state, first_actions)

    monkeypatch.setattr(SearchAgent, "_rollout", counted)
    return sizes


@pytest.mark.parametrize("luck", ["raw", "adjusted"])
def test_search__max_rollout_games_splits_one_decision_with_the_same_values(monkeypatch, luck):
    rules, observations, masks = _searched_rows(rows=1)
    spec = f"search(samples=40,depth=2,luck={luck}{{}}):ev"
    whole = make_agent(spec.format(""), rules, 5)
    actions, values = whole.act_with_values(observations, masks)
    sizes = _batch_sizes(monkeypatch)
    split = make_agent(spec.format(",max_rollout_games=100"), rules, 5)
    split_actions, split_values = split.act_with_values(observations, masks)
    assert max(sizes) <= 100 and len(sizes) >= 3  # one decision, several batches
    assert sum(sizes) == 40 * int(masks.sum())
    np.testing.assert_array_equal(split_actions, actions)
    np.testing.assert_array_equal(split_values.means, values.means)
    np.testing.assert_array_equal(split_values.errors, values.errors)


def test_search__max_rollout_games_bounds_every_batch_of_several_rows(monkeypatch):
    rules, observations, masks = _searched_rows(rows=3)
    whole = make_agent("search(samples=12,depth=2):ev", rules, 9).act(observations, masks)
    sizes = _batch_sizes(monkeypatch)
    split = make_agent("search(samples=12,depth=2,max_rollout_games=7):ev", rules, 9)
    np.testing.assert_array_equal(split.act(observations, masks), whole)
    assert max(sizes) <= 7 and split.largest_batch == max(sizes)


def test_make_agent__search_over_a_search_is_refused():
    for spec in ("search:search:ev", "search(samples=2):search(samples=1):random",
                 "search:search"):
        with pytest.raises(AgentSpecError, match="a search over a search is refused"):
            make_agent(spec, SkyjoRules(), 0)


def test_make_agent__two_thousand_nested_searches_are_one_short_line_at_once():
    started = time.perf_counter()
    with pytest.raises(AgentSpecError) as error:
        make_agent("search:" * 2000 + "ev", SkyjoRules(), 0)
    assert time.perf_counter() - started < 1.0
    message = str(error.value)
    assert f"14,002 characters long; at most {MAX_SPEC_LENGTH:,}" in message
    assert len(message) < 200 and "\n" not in message


@pytest.mark.parametrize("spec, words", [
    ("search:" * 2000 + "ev", "characters long"),
    ("search:search:ev", "a search over a search is refused"),
    ("search(samples=50000):ev", "samples must be at most 10,000"),
])
def test_evaluate__hostile_search_specs_are_one_line_exit_2(capsys, spec, words):
    code = evaluate_main(["--agents", spec, "ev", "--games", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and words in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert len(err) < 300


# --- evaluate --resume -----------------------------------------------------------------

SPECS = ["ev", "greedy"]


def _identity():
    return tournament_identity(SPECS, SkyjoRules(), 8, 3, 2)


@pytest.fixture(scope="module")
def chunk():
    from agents.baselines.heuristics import EVAgent, GreedyAgent

    rules = SkyjoRules()
    records, _ = play_deals([EVAgent(rules, 0), GreedyAgent(rules, 1)], rules, 3, range(0, 2))
    return records


def _files(directory):
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_chunk_store__one_corrupted_byte_is_named_and_nothing_changes(tmp_path, chunk):
    store = ChunkStore(tmp_path, _identity())
    store.save(0, chunk, SPECS, 1.0)
    data = bytearray(store.chunk_file(0).read_bytes())
    data[len(data) // 2] ^= 0x01
    store.chunk_file(0).write_bytes(bytes(data))
    before = _files(tmp_path)
    with pytest.raises(ResumeError, match=r"chunk_00000.npz: its SHA-256 differs") as error:
        ChunkStore(tmp_path, _identity()).load(0, range(0, 2), 2)
    assert "\n" not in str(error.value)
    assert _files(tmp_path) == before


def test_chunk_store__an_edited_value_is_refused(tmp_path, chunk):
    store = ChunkStore(tmp_path, _identity())
    edited = GameRecords(**{name: np.copy(value) for name, value in vars(chunk).items()})
    edited.total[0, 0] -= 50  # a better score for ev
    store.save(0, chunk, SPECS, 1.0)
    real_checksum = store.checksum_file(0).read_text()
    with open(store.chunk_file(0), "wb") as handle:
        np.savez(handle, names=np.array(SPECS),
                 **{name: getattr(edited, name) for name in vars(edited)})
    assert store.checksum_file(0).read_text() == real_checksum
    with pytest.raises(ResumeError, match="damaged or edited"):
        store.load(0, range(0, 2), 2)


@pytest.mark.parametrize("field, value, words", [
    ("elapsed_s", "abc", "field 'elapsed_s' is 'abc'"),
    ("sha256", 5, "field 'sha256' is 5"),
    ("identity", [], "not a tournament record"),
])
def test_chunk_store__a_tournament_json_field_of_a_wrong_type_is_named(tmp_path, field, value,
                                                                      words):
    ChunkStore(tmp_path, _identity())
    record_file = tmp_path / "tournament.json"
    record = json.loads(record_file.read_text())
    record[field] = value
    record_file.write_text(json.dumps(record))
    with pytest.raises(ResumeError, match="tournament.json: ") as error:
        ChunkStore(tmp_path, _identity())
    assert words in str(error.value) and "\n" not in str(error.value)


def test_chunk_store__a_checkpoints_list_is_another_tournament_not_a_crash(tmp_path):
    ChunkStore(tmp_path, _identity())
    record_file = tmp_path / "tournament.json"
    record = json.loads(record_file.read_text())
    record["identity"]["checkpoints"] = []
    del record["sha256"]
    record["identity"]["format"] = 1  # as if from before checksums: only the types catch it
    record_file.write_text(json.dumps(record))
    with pytest.raises(ResumeError, match="holds another tournament: checkpoints was"):
        ChunkStore(tmp_path, _identity())


def test_chunk_store__a_directory_of_other_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ResumeError, match="holds 1 file.*but no tournament.json"):
        ChunkStore(tmp_path, _identity())
    assert _files(tmp_path) == {"notes.txt": b"mine"}
    ChunkStore(tmp_path / "empty", _identity())  # a new directory is fine
    (tmp_path / "made").mkdir()
    ChunkStore(tmp_path / "made", _identity())  # and so is an empty one


def test_chunk_store__a_directory_from_before_checksums_resumes_with_a_note(tmp_path, chunk):
    store = ChunkStore(tmp_path, _identity())
    store.save(0, chunk, SPECS, 1.0)
    store.checksum_file(0).unlink()
    record_file = tmp_path / "tournament.json"
    record = json.loads(record_file.read_text())
    del record["sha256"]
    record["identity"]["format"] = 1
    record_file.write_text(json.dumps(record))
    old = ChunkStore(tmp_path, _identity())
    assert old.format == 1 and "written before checksums" in old.notes[0]
    records, names = old.load(0, range(0, 2), 2)
    np.testing.assert_array_equal(records.total, chunk.total)
    old.save(1, chunk, SPECS, 2.0)  # new chunks get a checksum; the directory stays format 1
    assert old.checksum_file(1).exists()
    again = ChunkStore(tmp_path, _identity())
    assert again.format == 1 and again.load(0, range(0, 2), 2) is not None


def test_chunk_store__a_chunk_without_its_checksum_is_played_again(tmp_path, chunk):
    store = ChunkStore(tmp_path, _identity())
    store.save(0, chunk, SPECS, 1.0)
    assert store.has_all(1)
    store.checksum_file(0).unlink()  # a stop between the chunk and its checksum
    assert not store.has_all(1) and store.load(0, range(0, 2), 2) is None


# --- skyjo-play prompt -----------------------------------------------------------------


@pytest.mark.parametrize("answer", ["²", "9" * 4301, "١", "1,²", "²,1", "1" * 5000 + ",1",
                                    " " * 10_000, "3" * 41])
def test_parse_choice__unicode_digits_and_huge_numbers_are_unclear(answer):
    entries = [(0, "draw"), (1, "take")]
    assert parse_choice(answer, entries, SkyjoRules()) is None


def test_play__unicode_digits_and_huge_numbers_re_prompt(capsys):
    lines: list[str] = []
    answers = itertools.chain(["²", "9" * 4301, "1,²"], itertools.repeat("q"))
    iterator = iter(answers)
    code = play_main(["--opponents", "random", "--seed", "1"],
                     read=lambda prompt: next(iterator), write=lines.append)
    assert code == 0 and lines[-1] == "Bye."
    assert len([line for line in lines if line.startswith("Hint:")]) == 3
    assert "Traceback" not in capsys.readouterr().err


def test_play__undecodable_input_re_prompts():
    lines: list[str] = []
    answers = iter([None, "q"])

    def read(prompt):
        answer = next(answers)
        if answer is None:
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
        return answer

    assert play_main(["--opponents", "random", "--seed", "1"], read=read,
                     write=lines.append) == 0
    assert any(line.startswith("Hint:") for line in lines)


# --- one-line errors -------------------------------------------------------------------


class _Flooding:
    """An agent whose ``act`` raises with a huge, many-line message."""

    name = "flooding"

    def act(self, observations, masks):
        raise RuntimeError("x" * 10_000 + "\nsecond line")


def test_tournament__an_agent_error_is_cut_to_one_short_line():
    from agents.evaluation.games import AgentActionError

    rules = SkyjoRules()
    with pytest.raises(AgentActionError) as error:
        play_deals([_Flooding(), make_agent("ev", rules, 0)], rules, 0, range(0, 1))
    message = str(error.value)
    assert "\n" not in message and "second line" not in message
    assert len(message) < ONE_LINE_LIMIT + 100


class _FloodingConstructor:
    def __init__(self):
        raise ValueError("y" * 10_000)


def test_make_agent__a_constructor_error_is_cut_to_one_short_line(monkeypatch):
    import sys
    import types

    module = types.ModuleType("flooding_module")
    module.Agent = _FloodingConstructor
    monkeypatch.setitem(sys.modules, "flooding_module", module)
    with pytest.raises(AgentSpecError, match="constructing _FloodingConstructor failed") as error:
        make_agent("flooding_module:Agent", SkyjoRules(), 0)
    assert len(str(error.value)) < ONE_LINE_LIMIT + 100

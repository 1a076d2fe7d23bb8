"""skyjo-play: scripted input drives a whole game; bad input gets a hint."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

import agents.cli.play as play
from agents.cli.play import main
from skyjo_env.core import layout


def _scripted(answers):
    iterator = iter(answers)

    def read(prompt: str) -> str:
        return next(iterator)

    return read


def test_play__scripted_player_finishes_a_game():
    lines: list[str] = []
    # "1" always picks the first legal action, which is always available
    code = main(["--opponents", "greedy", "--seed", "4"], read=_scripted(itertools.repeat("1")),
                write=lines.append)
    assert code == 0
    assert any(line.startswith("Game over. Totals") for line in lines)
    assert any("Round over" in line for line in lines)
    assert any("seat 0" in line and "seat 1" in line for line in lines)  # the table was shown


def test_play__bad_input_gets_a_hint_and_is_asked_again():
    lines: list[str] = []
    answers = itertools.chain(["banana", "99", "9,9"], itertools.repeat("q"))
    code = main(["--opponents", "random", "--seed", "1"], read=_scripted(answers),
                write=lines.append)
    assert code == 0
    hints = [line for line in lines if line.startswith("Hint:")]
    assert len(hints) == 3
    assert lines[-1] == "Bye."


@pytest.fixture
def game_states(monkeypatch):
    """The states skyjo-play creates, kept for inspection after the game."""
    states = []
    real_new_batch = play.new_batch

    def new_batch(rules, batch_size):
        state = real_new_batch(rules, batch_size)
        states.append(state)
        return state

    monkeypatch.setattr(play, "new_batch", new_batch)
    return states


def test_play__row_col_answers_pick_that_slot(game_states):
    lines: list[str] = []
    # the two initial reveals: row 2, col 2 is slot 5; row 3, col 4 is slot 11
    answers = itertools.chain(["2,2", "3,4"], itertools.repeat("q"))
    code = main(["--opponents", "random", "--seed", "2"], read=_scripted(answers),
                write=lines.append)
    assert code == 0 and lines[-1] == "Bye."
    (state,) = game_states
    face_up = np.flatnonzero(state.slot_state[0, 0] == layout.FACE_UP)
    assert face_up.tolist() == [5, 11]
    assert (np.delete(state.slot_state[0, 0], [5, 11]) == layout.HIDDEN).all()


def test_play__menu_number_picks_that_action(game_states):
    # menu entry 3 in the first initial reveal is the third face-down slot, slot 2
    answers = itertools.chain(["3"], itertools.repeat("q"))
    main(["--opponents", "random", "--seed", "2"], read=_scripted(answers), write=[].append)
    (state,) = game_states
    assert np.flatnonzero(state.slot_state[0, 0] == layout.FACE_UP).tolist() == [2]


def test_play__end_of_input_quits_cleanly():
    def read(prompt: str) -> str:
        raise EOFError

    lines: list[str] = []
    assert main(["--opponents", "ev"], read=read, write=lines.append) == 0
    assert lines[-1] == "Bye."


def test_play__unknown_opponent_is_an_error(capsys):
    assert main(["--opponents", "wizard"]) == 2
    assert "wizard" in capsys.readouterr().err


def test_play__ctrl_c_exits_130_without_traceback(capsys):
    def read(prompt: str) -> str:
        raise KeyboardInterrupt

    lines: list[str] = []
    assert main(["--opponents", "random", "--seed", "0"], read=read, write=lines.append) == 130
    assert lines[-1] == "Interrupted."
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--seed", "-1"], "--seed must be >= 0, got -1"),
        (["--seat", "5"], "--seat must be in 0..1, got 5"),
        (["--rules", "no-such-preset"], "unknown rules preset"),
        (["random"] * 11, "at least num_players * rows * cols + 2 = 13 * 3 * 4 + 2 = 158 cards"),
    ],
)
def test_play__bad_argument_is_one_line_exit_2(capsys, argv, words):
    assert main(["--opponents", "random", *argv], read=_scripted([]), write=[].append) == 2
    err = capsys.readouterr().err
    assert err.startswith("skyjo-play: error: ") and words in err
    assert err.count("\n") == 1


FAKE_AGENTS = """
import numpy as np


class Fragile:
    name = "fragile"

    def act(self, observations, action_masks):
        raise RuntimeError("kaboom")


class OneArg:
    name = "one-arg"

    def act(self, observations):
        return np.zeros(len(observations), np.int64)
"""


@pytest.fixture
def fake_agents(tmp_path, monkeypatch):
    """An importable module ``skyjo_play_fake_agents``."""
    (tmp_path / "skyjo_play_fake_agents.py").write_text(FAKE_AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "skyjo_play_fake_agents", raising=False)
    yield "skyjo_play_fake_agents"
    sys.modules.pop("skyjo_play_fake_agents", None)


def test_play__failing_opponent_is_named_in_one_line(capsys, fake_agents):
    spec = f"{fake_agents}:Fragile"
    # seat 0 reveals first, then the opponent at seat 1 acts and fails
    code = main(["--opponents", spec, "--seed", "0"], read=_scripted(itertools.repeat("1")),
                write=[].append)
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert f"agent 'fragile' (spec '{spec}') at seat 1 failed in act(): RuntimeError" in err


def test_play__opponent_with_wrong_act_signature_is_exit_2(capsys, fake_agents):
    code = main(["--opponents", f"{fake_agents}:OneArg"], read=_scripted([]), write=[].append)
    err = capsys.readouterr().err
    assert code == 2 and "cannot be called as act(observations, action_masks)" in err


def test_play__turn_cap_reports_a_truncated_game(tmp_path):
    rules_file = tmp_path / "capped.yaml"
    rules_file.write_text("max_turns_per_round: 3\n")
    lines: list[str] = []
    code = main(["--opponents", "random", "--seed", "1", "--rules", str(rules_file)],
                read=_scripted(itertools.repeat("1")), write=lines.append)
    assert code == 0
    assert lines[-1].startswith("Game over: truncated by the turn cap (3 turns in a round)")
    assert "nobody wins" in lines[-1]
    assert not any(line.startswith("Game over. Totals") for line in lines)  # no "win" line


@pytest.mark.slow  # a subprocess
def test_play__a_closed_stdout_pipe_exits_141_without_a_traceback(tmp_path, run_into_closed_pipe):
    completed = run_into_closed_pipe("agents.cli.play", ["--opponents", "greedy"], tmp_path)
    assert completed.returncode == 141
    assert completed.stderr == ""

"""skyjo-play: scripted input drives a whole game; bad input gets a hint."""

from __future__ import annotations

import itertools

from agents.cli.play import main


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


def test_play__row_col_answers_pick_that_slot():
    lines: list[str] = []
    answers = itertools.chain(["1,1", "3,4"], itertools.repeat("q"))
    main(["--opponents", "greedy", "--seed", "2"], read=_scripted(answers), write=lines.append)
    tables = [line for line in lines if line.startswith("Skyjo: round")]
    assert len(tables) >= 2  # first reveal accepted, second prompt shown


def test_play__end_of_input_quits_cleanly():
    def read(prompt: str) -> str:
        raise EOFError

    lines: list[str] = []
    assert main(["--opponents", "ev"], read=read, write=lines.append) == 0
    assert lines[-1] == "Bye."


def test_play__unknown_opponent_is_an_error(capsys):
    assert main(["--opponents", "wizard"]) == 2
    assert "wizard" in capsys.readouterr().err

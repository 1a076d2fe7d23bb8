"""The helpers every command line shares (`agents.cli`): a closed standard output, a Ctrl-C
that lands inside a finalizer."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from agents.cli import (
    EXIT_BROKEN_PIPE,
    interrupts_kept_from_finalizers,
    quiet_on_closed_stdout,
    stdout_reader_gone,
)


def test_stdout_reader_gone__false_while_standard_output_is_read(capsys):
    assert stdout_reader_gone() is False


def test_quiet_on_closed_stdout__passes_the_status_through():
    assert quiet_on_closed_stdout(lambda: 7)() == 7


def test_quiet_on_closed_stdout__another_broken_pipe_is_raised_as_before():
    """A broken pipe that is not standard output's (a worker's socket) is not hidden."""

    def main() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        quiet_on_closed_stdout(main)()


def test_quiet_on_closed_stdout__a_gone_reader_gives_141(monkeypatch):
    import agents.cli as cli

    silenced = []
    monkeypatch.setattr(cli, "stdout_reader_gone", lambda: True)
    monkeypatch.setattr(cli, "silence_closed_stdout", lambda: silenced.append(True))

    def main() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert quiet_on_closed_stdout(main)() == EXIT_BROKEN_PIPE
    assert silenced == [True]


@pytest.fixture(autouse=True)
def _ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt in these tests even when the suite runs with it
    ignored (started as a background job, e.g. ``nohup make test &``), as Python's own
    handler does in a foreground process."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class _CtrlCWhileFinalized:
    """An object whose finalizer is running when Ctrl-C arrives (as Ray's
    ``ObjectRef.__del__`` can be): the ``KeyboardInterrupt`` is raised inside ``__del__``."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)  # the default handler raises KeyboardInterrupt here


def _work_after_a_finalizer() -> None:
    _CtrlCWhileFinalized()  # dropped at once: its __del__ runs here
    for _ in range(100):  # where a re-delivered interrupt lands
        time.sleep(0.01)


def test_interrupts_kept_from_finalizers__a_ctrl_c_inside_a_del_still_stops_the_work(
        monkeypatch):
    printed = []  # what Python would print as "Exception ignored in ..."
    monkeypatch.setattr(sys, "unraisablehook", printed.append)
    with pytest.raises(KeyboardInterrupt), interrupts_kept_from_finalizers():
        _work_after_a_finalizer()
    assert printed == []


def test_interrupts_kept_from_finalizers__other_finalizer_errors_reach_the_old_hook(
        monkeypatch):
    printed = []
    monkeypatch.setattr(sys, "unraisablehook", printed.append)

    class Raising:
        def __del__(self):
            raise ValueError("a real bug")

    with interrupts_kept_from_finalizers():
        Raising()
    assert [type(unraisable.exc_value) for unraisable in printed] == [ValueError]
    assert sys.unraisablehook == printed.append  # the old hook is back


def test_evaluate_main__ctrl_c_inside_a_finalizer_exits_130_in_one_line(monkeypatch, capsys):
    import agents.cli.evaluate as evaluate

    monkeypatch.setattr(evaluate, "evaluate_agents_distributed",
                        lambda *args, **kwargs: _work_after_a_finalizer())
    assert evaluate.main(["--agents", "ev", "ev", "--workers", "1", "--no-progress"]) == 130
    assert capsys.readouterr().err == "evaluate: error: interrupted\n"


def test_distill_main__ctrl_c_inside_a_finalizer_exits_130_in_one_line(tmp_path, monkeypatch,
                                                                       capsys):
    import agents.training.expert as expert
    from agents.cli.distill import main as distill_main

    monkeypatch.setattr(expert, "distill_checkpoint",
                        lambda *args, **kwargs: _work_after_a_finalizer())
    status = distill_main(["--checkpoint", "models/ppo_2p.zip", "--out",
                           str(tmp_path / "fitted.zip"), "--games", "2", "--no-progress"])
    assert status == 130
    assert capsys.readouterr().err == "skyjo-distill: interrupted; no step finished\n"


def test_train_main__ctrl_c_inside_a_finalizer_exits_130_in_one_line(tmp_path, monkeypatch,
                                                                     capsys):
    """The trainer's second Ctrl-C (stop at once) raised inside a finalizer still stops."""
    import agents.cli.train as train

    monkeypatch.setattr(train, "run_training", lambda *args, **kwargs: _work_after_a_finalizer())
    status = train.main(["--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert status == 130
    assert capsys.readouterr().err.startswith("error: interrupted before training finished; ")

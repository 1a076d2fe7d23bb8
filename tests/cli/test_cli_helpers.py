"""The helpers every command line shares (`agents.cli`): a closed standard output."""

from __future__ import annotations

import pytest

from agents.cli import EXIT_BROKEN_PIPE, quiet_on_closed_stdout, stdout_reader_gone


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

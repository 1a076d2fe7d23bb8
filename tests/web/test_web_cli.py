"""skyjo-web's command line: loopback by default, the URL printed, bad arguments exit 2."""

from __future__ import annotations

import pytest

import agents.cli.web as web_cli


@pytest.fixture
def served(monkeypatch):
    """What uvicorn.run was asked to serve (nothing is served)."""
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append((app, kwargs)))
    return calls


def test_web_cli__binds_to_loopback_and_prints_the_url(served, capsys):
    assert web_cli.main([]) == 0
    app, options = served[0]
    assert options["host"] == "127.0.0.1" and options["port"] == 8000
    assert "http://127.0.0.1:8000/" in capsys.readouterr().out
    assert app.state.web.settings.allow_module_specs is False


def test_web_cli__options_reach_the_settings(served, tmp_path, capsys):
    assert web_cli.main(["--port", "8123", "--replays", str(tmp_path), "--allow-module-specs",
                         "--max-games", "3", "--hint-ms", "500"]) == 0
    app, options = served[0]
    settings = app.state.web.settings
    assert options["port"] == 8123 and settings.replays_dir == tmp_path
    assert settings.allow_module_specs and settings.max_games == 3
    assert settings.hint_time_s == 0.5


def test_web_cli__another_host_is_warned_about(served, capsys):
    assert web_cli.main(["--host", "0.0.0.0"]) == 0
    assert "reachable from other machines" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--port", "0"], "--port"),
    (["--port", "70000"], "--port"),
    (["--models-dir", "/nonexistent"], "--models-dir"),
    (["--replays", "/nonexistent"], "--replays"),
    (["--max-games", "0"], "--max-games"),
    (["--hint-ms", "1"], "--hint-ms"),
])
def test_web_cli__bad_arguments_exit_2_naming_the_option(served, capsys, argv, message):
    assert web_cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert served == []

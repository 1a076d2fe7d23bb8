"""Fixtures of the skyjo-web tests: one app per module, replays written on the fly."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="skyjo-web needs the web extra: pip install -e '.[web]'")

from fastapi.testclient import TestClient  # noqa: E402

from agents.evaluation.replays import ReplayRecorder  # noqa: E402
from agents.evaluation.tournament import play_tournament  # noqa: E402
from agents.registry import make_agent  # noqa: E402
from agents.web.server import WebSettings, create_app  # noqa: E402
from skyjo_env.core import load_rules  # noqa: E402


def write_replays(directory, count: int = 2, select: str = "first") -> list:
    """Play a short ev-vs-greedy tournament (single rounds) and keep ``count`` replays."""
    rules = load_rules("single_round", num_players=2)
    agents = [make_agent("ev", rules, 1), make_agent("greedy", rules, 2)]
    recorder = ReplayRecorder(directory, count, select, rules, 0, ["ev", "greedy"],
                              ["ev", "greedy"])
    play_tournament(agents, rules, 4, 0, progress=False, ratings=False, recorder=recorder)
    return recorder.written


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("replays")
    write_replays(directory)
    (directory / "broken.json").write_text(json.dumps({"format": "skyjo-replay"}))
    return directory


@pytest.fixture(scope="module")
def app(replay_dir):
    return create_app(WebSettings(replays_dir=replay_dir, max_games=64))


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as test_client:
        yield test_client

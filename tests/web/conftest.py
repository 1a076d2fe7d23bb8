"""Fixtures of the skyjo-web tests: one app per module, replays written on the fly."""

from __future__ import annotations

import json
import os

import pytest

try:
    import fastapi  # noqa: F401
except ImportError:
    _why = "skyjo-web needs the web extra: pip install -e '.[web]' (make setup does)"
    if os.environ.get("CI", "").lower() == "true":
        raise RuntimeError(_why) from None
    pytest.skip(_why, allow_module_level=True)

from fastapi.testclient import TestClient  # noqa: E402
from web_replays import write_replays  # noqa: E402

from agents.web.server import WebSettings, create_app  # noqa: E402


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

"""The layers import only what lies below them (checked in fresh interpreters)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

RL_LIBRARIES = ("torch", "stable_baselines3", "sb3_contrib", "gymnasium", "pettingzoo", "agents")


def _imported_after(statement: str) -> list[str]:
    probe = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps([m for m in {RL_LIBRARIES!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # subprocess runs
@pytest.mark.parametrize(
    "statement, allowed",
    [
        ("import skyjo_env.core", ()),
        ("import skyjo_env", ()),
        # the Gymnasium id is registered by an import hook, not by importing Gymnasium
        ("import skyjo_env.registration", ()),
        ("from skyjo_env import env", ("gymnasium", "pettingzoo")),
        ("from skyjo_env import SkyjoGymEnv", ("gymnasium",)),
        ("import skyjo_env.rewards, skyjo_env.learner_games", ()),
    ],
)
def test_layering__engine_and_envs_import_nothing_above_them(statement, allowed):
    assert sorted(set(_imported_after(statement)) - set(allowed)) == []

"""`gymnasium.make("skyjo_env/Skyjo-v0")`: registered whichever of skyjo_env and Gymnasium
is imported first, wrapped as Gymnasium wraps, and passing Gymnasium's checker."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

import skyjo_env
from skyjo_env import SkyjoGymEnv, load_rules
from skyjo_env.registration import ENV_ID, make_single_agent_env, register_when_gymnasium_loads

from .helpers import PickAgent


@pytest.mark.slow  # subprocess runs
@pytest.mark.parametrize(
    "script",
    [
        # skyjo_env first: it must not import Gymnasium, and still registers once it loads
        "import sys, skyjo_env\nassert 'gymnasium' not in sys.modules\nimport gymnasium\n"
        "env = gymnasium.make('skyjo_env/Skyjo-v0', num_players=3)",
        "import gymnasium, skyjo_env\nenv = gymnasium.make('skyjo_env/Skyjo-v0', num_players=3)",
        "import gymnasium\nenv = gymnasium.make('skyjo_env:skyjo_env/Skyjo-v0', num_players=3)",
    ],
    ids=["skyjo_env_first", "gymnasium_first", "module_prefix"],
)
def test_registration__make_works_whichever_is_imported_first(script):
    probe = f"{script}\nprint(type(env.unwrapped).__name__, env.unwrapped.rules.num_players)"
    done = subprocess.run([sys.executable, "-W", "error", "-c", probe], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["SkyjoGymEnv", "3"]


def test_registration__made_env_is_wrapped_as_gymnasium_wraps_and_plays():
    env = gymnasium.make(ENV_ID, num_players=3, opponents=PickAgent(), episode="round")
    assert isinstance(env.unwrapped, SkyjoGymEnv)
    assert env.spec.id == ENV_ID
    assert "OrderEnforcing" in str(env) and "PassiveEnvChecker" in str(env)
    with pytest.raises(gymnasium.error.ResetNeeded):  # order enforcing: step before reset
        env.step(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the passive checker's warnings fail the test
        observation, info = env.reset(seed=5)
        steps = 0
        while True:
            masks = env.get_wrapper_attr("action_masks")()
            np.testing.assert_array_equal(masks, env.unwrapped.action_masks())
            observation, reward, terminated, truncated, info = env.step(int(np.argmax(masks)))
            steps += 1
            if terminated or truncated:
                break
    assert steps > 3 and env.observation_space.contains(observation)
    assert len(info["round_scores"]) == 3


def test_registration__gymnasium_checker_passes_on_the_made_env():
    env = gymnasium.make(ENV_ID, rules="online", num_players=3, illegal_action="penalize")
    assert env.unwrapped.rules == load_rules("online", num_players=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gymnasium_check_env(env, skip_render_check=True)
        gymnasium_check_env(env.unwrapped, skip_render_check=True)
    # the only remark: the made env carries Gymnasium's own wrappers
    assert [str(w.message) for w in caught if "different from the unwrapped" not in
            str(w.message)] == []


def test_registration__same_seed_same_game_as_the_class():
    made = gymnasium.make(ENV_ID, num_players=2, opponents=PickAgent())
    direct = SkyjoGymEnv(num_players=2, opponents=PickAgent())
    observation, _ = made.reset(seed=11)
    np.testing.assert_array_equal(observation, direct.reset(seed=11)[0])
    steps, over = 0, False
    while not over:  # the whole game, step by step, with the same actions
        masks = direct.action_masks()
        action = int(np.flatnonzero(masks)[steps % int(masks.sum())])
        ours, theirs = made.step(action), direct.step(action)
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1:4] == theirs[1:4]  # reward, terminated, truncated
        over, steps = ours[2] or ours[3], steps + 1
    assert steps > 20 and made.unwrapped.learner_seat == direct.learner_seat


def test_make_single_agent_env__unknown_preset_is_one_line_naming_it():
    with pytest.raises(ValueError, match=r"^unknown rules preset 'nosuch'; available: .*official"):
        make_single_agent_env(rules="nosuch")


def test_register_when_gymnasium_loads__is_idempotent():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        register_when_gymnasium_loads()  # Gymnasium is imported here: no second registration
        register_when_gymnasium_loads()
    assert [str(w.message) for w in caught] == []  # Gymnasium warns on "Overriding environment"
    assert gymnasium.spec(ENV_ID).entry_point == "skyjo_env.registration:make_single_agent_env"
    assert callable(skyjo_env.env)  # the PettingZoo-style factory stays

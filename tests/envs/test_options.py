"""`EnvOptions`: one set of defaults and checks for the options every view takes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from skyjo_env.aec import env, raw_env
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.options import OPTION_NAMES, EnvOptions
from skyjo_env.registration import make_single_agent_env
from skyjo_env.single_agent import SkyjoGymEnv
from skyjo_env.vec_env import SkyjoVecEnv

VIEWS = {
    "aec": lambda **kw: raw_env(**kw),
    "gym": lambda **kw: SkyjoGymEnv(**kw),
    "vec": lambda **kw: SkyjoVecEnv(2, **kw),
    "gymnasium_entry_point": lambda **kw: make_single_agent_env(**kw),
}


def test_env_options__defaults():
    options = EnvOptions()
    assert options == EnvOptions(SkyjoRules(), "game", "raise", -1.0, None)
    assert OPTION_NAMES == {"episode", "illegal_action", "illegal_penalty", "render_mode"}


@pytest.mark.parametrize("view", VIEWS)
def test_views__built_without_options_have_the_default_options(view):
    assert VIEWS[view]().options == EnvOptions()


@pytest.mark.parametrize("view", VIEWS)
def test_views__keep_the_options_and_rule_fields_given_as_keywords(view):
    built = VIEWS[view](num_players=3, episode="round", illegal_action="penalize",
                        illegal_penalty=-2, render_mode="ansi")
    assert built.options == EnvOptions(SkyjoRules(num_players=3), "round", "penalize", -2.0,
                                       "ansi")
    assert built.rules == SkyjoRules(num_players=3)
    assert built.render_mode == "ansi"


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize(
    "keywords, message",
    [
        ({"episode": "match"}, "episode='match' is invalid: allowed 'game' or 'round'"),
        ({"illegal_action": "ignore"},
         "illegal_action='ignore' is invalid: allowed 'raise' or 'penalize'"),
        ({"illegal_penalty": float("nan")}, "illegal_penalty=nan is invalid: allowed a finite"),
        ({"illegal_penalty": "-1"}, "illegal_penalty='-1' is invalid: allowed a finite"),
        ({"render_mode": "rgb_array"},
         "render_mode='rgb_array' is invalid: allowed None, 'ansi', 'human'"),
        ({"num_player": 3}, "num_player"),  # not an option, so a rules field: unknown
    ],
)
def test_views__refuse_a_bad_option_with_the_same_message(view, keywords, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        VIEWS[view](**keywords)


def test_env_options__from_keywords_splits_options_from_rule_fields():
    options = EnvOptions.from_keywords(SkyjoRules(num_players=4), episode="round",
                                       target_score=50)
    assert options.rules == SkyjoRules(num_players=4, target_score=50)
    assert options.episode == "round" and options.illegal_action == "raise"


def test_env_options__round_episodes_run_one_round_games():
    rules = SkyjoRules(max_rounds=5)
    assert EnvOptions(rules, episode="round").engine_rules == rules.replace(max_rounds=1)
    assert EnvOptions(rules).engine_rules is rules
    assert EnvOptions(rules).game_bonus and not EnvOptions(rules, episode="round").game_bonus
    assert EnvOptions(illegal_action="penalize").penalize and not EnvOptions().penalize


def test_env_options__frozen_and_checked_on_replace():
    options = EnvOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.episode = "round"  # type: ignore[misc]
    assert options.replace(episode="round").episode == "round"
    with pytest.raises(ValueError, match="episode='rounds' is invalid"):
        options.replace(episode="rounds")
    with pytest.raises(ValueError, match="rules must be a SkyjoRules, got dict"):
        EnvOptions(rules={})  # type: ignore[arg-type]


def test_env_options__observation_space_is_the_views_space():
    options = EnvOptions(SkyjoRules(num_players=3))
    space = options.observation_space()
    assert space.dtype == np.float32
    gym_space = SkyjoGymEnv(num_players=3).observation_space
    np.testing.assert_array_equal(space.low, gym_space.low)
    np.testing.assert_array_equal(space.high, gym_space.high)
    aec_space = env(num_players=3).observation_space("player_0")["observation"]
    np.testing.assert_array_equal(space.high, aec_space.high)


def test_vec_env__seed_is_keyword_only():
    # episode used to be the fourth positional argument: nothing may silently take its place
    with pytest.raises(TypeError):
        SkyjoVecEnv(2, None, None, 5)  # type: ignore[misc]

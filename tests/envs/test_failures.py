"""Envs after an exception: bad learner actions change nothing; a failing opponent leaves
the env refusing to step until reset, with every card still accounted for (issue #9.4)."""

from __future__ import annotations

import numpy as np
import pytest

from skyjo_env import IllegalActionError, RandomAgent, SkyjoGymEnv, SkyjoVecEnv, env, raw_env
from skyjo_env.core import layout
from skyjo_env.learner_games import EnvNeedsResetError, OpponentError
from skyjo_env.protocol import sample_legal

from .helpers import assert_same_state, state_copy, unconserved_games


class FaultyAgent:
    """A random agent whose ``fail_on``-th call to `act` goes wrong in the way ``fault`` says:
    ``"raise"``, ``"illegal"`` (a masked-out action), ``"float"`` or ``"shape"`` (malformed)."""

    def __init__(self, fault: str, fail_on: int, name: str = "faulty"):
        self.fault = fault
        self.fail_on = fail_on
        self.name = name
        self.calls = 0
        self.inner = RandomAgent(0)

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Random legal actions, except on call ``fail_on``."""
        self.calls += 1
        actions = self.inner.act(observations, action_masks)
        if self.calls != self.fail_on:
            return actions
        if self.fault == "raise":
            raise RuntimeError("boom")
        if self.fault == "illegal":
            return np.argmin(action_masks, axis=1)
        if self.fault == "float":
            return actions.astype(np.float64)
        return actions[:, None]  # "shape"


FAULTS = {
    "raise": (OpponentError, "opponent agent 'faulty' raised RuntimeError: boom"),
    "illegal": (IllegalActionError, "opponent agent 'faulty' played an illegal action"),
    "float": (ValueError, "opponent agent 'faulty'.* got dtype float64"),
    "shape": (ValueError, r"opponent agent 'faulty'.* got dtype int64 shape \(\d+, 1\)"),
}


def assert_conserved(state) -> None:
    bad = unconserved_games(state)
    assert bad.size == 0, f"cards not conserved in games {bad}"


def play_vec(venv: SkyjoVecEnv, steps: int, rng: np.random.Generator) -> None:
    for _ in range(steps):
        venv.step(sample_legal(venv.action_masks(), rng))
        assert_conserved(venv.games.batch)


def play_gym(view: SkyjoGymEnv, steps: int, rng: np.random.Generator) -> None:
    for _ in range(steps):
        *_, terminated, truncated, _ = view.step(int(sample_legal(view.action_masks()[None], rng)[0]))
        assert_conserved(view.games.batch)
        if terminated or truncated:
            view.reset()


def assert_refuses_until_reset(env, step, reset) -> None:
    """After a failure: the next step is refused (changing nothing), no action is legal,
    cards are conserved; ``reset()`` recovers."""
    state = env.games.batch
    assert env.games.failure is not None
    assert_conserved(state)
    assert not env.action_masks().any()
    before = state_copy(state)
    with pytest.raises(EnvNeedsResetError, match=r"failed part-way .* call reset\(\)"):
        step()
    assert_same_state(state, before)
    reset()
    assert env.games.failure is None
    assert env.action_masks().any()
    assert_conserved(state)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_vec_env__failing_opponent_is_named_then_steps_are_refused_until_reset(fault):
    error, message = FAULTS[fault]
    venv = SkyjoVecEnv(6, num_players=3, opponents=FaultyAgent(fault, fail_on=7), seed=0)
    venv.reset()
    rng = np.random.default_rng(0)
    with pytest.raises(error, match=message):
        play_vec(venv, 20, rng)
    actions = np.zeros(6, np.int64)
    assert_refuses_until_reset(venv, lambda: venv.step(actions), venv.reset)
    play_vec(venv, 20, rng)


def test_vec_env__one_of_several_opponents_failing_is_named():
    opponents = [RandomAgent(1, name="fine"), FaultyAgent("raise", fail_on=4, name="bad")]
    venv = SkyjoVecEnv(6, num_players=3, opponents=opponents, seed=1)
    venv.reset()
    rng = np.random.default_rng(0)
    with pytest.raises(OpponentError, match="opponent agent 'bad' raised") as caught:
        play_vec(venv, 20, rng)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert_refuses_until_reset(venv, lambda: venv.step(np.zeros(6, np.int64)), venv.reset)
    play_vec(venv, 10, rng)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_single_agent__failing_opponent_is_named_then_steps_are_refused_until_reset(fault):
    error, message = FAULTS[fault]
    view = SkyjoGymEnv(num_players=2, opponents=FaultyAgent(fault, fail_on=9))
    view.reset(seed=0)
    rng = np.random.default_rng(0)
    with pytest.raises(error, match=message):
        play_gym(view, 60, rng)
    assert_refuses_until_reset(view, lambda: view.step(0), lambda: view.reset(seed=1))
    play_gym(view, 30, rng)


def test_envs__opponent_failing_inside_reset_is_refused_then_reset_recovers():
    view = SkyjoGymEnv(num_players=2, opponents=FaultyAgent("raise", fail_on=1))
    with pytest.raises(OpponentError, match="'faulty'"):
        view.reset(seed=0)
    assert_refuses_until_reset(view, lambda: view.step(0), lambda: view.reset(seed=0))

    venv = SkyjoVecEnv(4, num_players=2, opponents=FaultyAgent("illegal", fail_on=1), seed=0)
    with pytest.raises(IllegalActionError, match="'faulty'"):
        venv.reset()
    assert_refuses_until_reset(venv, lambda: venv.step(np.zeros(4, np.int64)), venv.reset)


class FailsOnRestart(RandomAgent):
    """Raises when called while some game of ``games`` has just been dealt (no decision
    taken yet), which inside `SkyjoVecEnv.step` happens only in an auto-reset."""

    def __init__(self):
        super().__init__(0, name="restarter")
        self.games = None

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Random legal actions, or raise in a restart once ``games`` is set."""
        if self.games is not None and (self.games.batch.game[:, layout.DECISIONS] == 0).any():
            raise RuntimeError("no restart")
        return super().act(observations, action_masks)


def test_vec_env__opponent_failing_in_an_auto_reset_is_refused_too():
    opponent = FailsOnRestart()
    venv = SkyjoVecEnv(4, num_players=2, opponents=opponent, episode="round", seed=0)
    venv.reset()
    opponent.games = venv.games
    rng = np.random.default_rng(0)
    with pytest.raises(OpponentError, match="'restarter' raised RuntimeError: no restart"):
        play_vec(venv, 2000, rng)
    assert venv.games.over.any() or (venv.games.batch.game[:, layout.DECISIONS] == 0).any()
    opponent.games = None
    assert_refuses_until_reset(venv, lambda: venv.step(np.zeros(4, np.int64)), venv.reset)
    play_vec(venv, 10, rng)


@pytest.mark.parametrize("make", ["gym", "vec"])
def test_envs__illegal_learner_action_changes_nothing_and_play_goes_on(make):
    rng = np.random.default_rng(0)
    if make == "gym":
        env = SkyjoGymEnv(num_players=2, opponents=RandomAgent(2))
        env.reset(seed=3)
        illegal = int(np.flatnonzero(~env.action_masks())[0])
        step = lambda: env.step(illegal)  # noqa: E731
        go_on = lambda: play_gym(env, 20, rng)  # noqa: E731
    else:
        env = SkyjoVecEnv(3, num_players=2, opponents=RandomAgent(2), seed=3)
        env.reset()
        actions = sample_legal(env.action_masks(), rng)
        actions[2] = int(np.flatnonzero(~env.action_masks()[2])[0])
        step = lambda: env.step(actions)  # noqa: E731
        go_on = lambda: play_vec(env, 20, rng)  # noqa: E731
    before, masks = state_copy(env.games.batch), env.action_masks()
    with pytest.raises(IllegalActionError, match="illegal action"):
        step()
    assert_same_state(env.games.batch, before)
    np.testing.assert_array_equal(env.action_masks(), masks)
    assert env.games.failure is None
    go_on()


BAD_GYM_ACTIONS = {
    "float": (3.7, TypeError, "got float 3.7"),
    "integral float": (3.0, TypeError, "got float 3.0"),
    "numpy float": (np.float64(3.0), TypeError, r"got float64 (np\.float64\()?3\.0"),
    "string": ("5", TypeError, "got str '5'"),
    "bool": (True, TypeError, "got the bool True"),
    "numpy bool": (np.True_, TypeError, r"got the bool (np\.)?True"),
    "None": (None, TypeError, "got NoneType None"),
    "two ids": (np.array([1, 2]), ValueError, r"array of shape \(2,\)"),
    "batch of one": (np.array([3]), ValueError, r"a 0-d array at most\), got an array of "
                     r"shape \(1,\)"),
    "column of one": (np.array([[3]]), ValueError, r"shape \(1, 1\)"),
    "float array": (np.array(3.0), TypeError, "array of dtype float64"),
    "bool array": (np.array([True]), TypeError, "array of dtype bool"),
}


@pytest.mark.parametrize("name", sorted(BAD_GYM_ACTIONS))
def test_single_agent__non_integer_action_is_refused_naming_it(name):
    action, error, message = BAD_GYM_ACTIONS[name]
    view = SkyjoGymEnv(num_players=2, illegal_action="penalize")
    view.reset(seed=0)
    before = state_copy(view.games.batch)
    with pytest.raises(error, match=message):
        view.step(action)
    assert_same_state(view.games.batch, before)
    assert view.games.failure is None


@pytest.mark.parametrize(
    "convert", [int, np.int64, np.int32, np.uint8, np.array]
)
def test_single_agent__integer_actions_of_any_integer_type_play_the_same(convert):
    def run(convert):
        view = SkyjoGymEnv(num_players=2, opponents=RandomAgent(5))
        observations = [view.reset(seed=4)[0]]
        for _ in range(15):
            action = int(np.flatnonzero(view.action_masks())[-1])
            observations.append(view.step(convert(action))[0])
        return np.stack(observations)

    np.testing.assert_array_equal(run(convert), run(int))


def test_single_agent__action_too_big_for_int64_is_illegal():
    view = SkyjoGymEnv(num_players=2)
    view.reset(seed=0)
    with pytest.raises(IllegalActionError, match=f"action {2**70}"):
        view.step(2**70)
    view = SkyjoGymEnv(num_players=2, illegal_action="penalize", illegal_penalty=-2.0)
    view.reset(seed=0)
    assert view.step(2**70)[1:3] == (-2.0, True)


VEC_PREFIX = r"SkyjoVecEnv actions must be an integer array of shape \(4,\), "
BAD_VEC_ACTIONS = {
    "short": (np.zeros(3, np.int64), r"got dtype int64 shape \(3,\)"),
    "column": (np.zeros((4, 1), np.int64), r"got dtype int64 shape \(4, 1\)"),
    "scalar": (np.int64(0), r"got dtype int64 shape \(\)"),
    "float": (np.zeros(4), "got dtype float64"),
    "bool": (np.zeros(4, np.bool_), "got dtype bool"),
    "strings": (["0", "0", "0", "0"], "got dtype <U1"),
}


@pytest.mark.parametrize("name", sorted(BAD_VEC_ACTIONS))
def test_vec_env__malformed_actions_are_refused_naming_them(name):
    actions, message = BAD_VEC_ACTIONS[name]
    venv = SkyjoVecEnv(4, num_players=2, illegal_action="penalize", seed=0)
    venv.reset()
    before = state_copy(venv.games.batch)
    with pytest.raises(ValueError, match=VEC_PREFIX + message):
        venv.step(actions)
    venv.step_async(np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="SkyjoVecEnv actions"):
        venv.step_async(actions)  # refused: the earlier actions are dropped too
    assert_same_state(venv.games.batch, before)
    with pytest.raises(RuntimeError, match="step_async must be called"):
        venv.step_wait()  # nothing was stored
    venv.step(sample_legal(venv.action_masks(), np.random.default_rng(0)))
    assert_conserved(venv.games.batch)


def test_learner_games__failing_chooser_leaves_the_opponents_as_they_were():
    keep = RandomAgent(0, name="keep")
    venv = SkyjoVecEnv(4, num_players=2, opponents=keep, seed=0)
    calls = []

    def chooser(rng):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("no more agents")
        return RandomAgent(rng.integers(100))

    with pytest.raises(RuntimeError, match="no more agents"):
        venv.set_opponents(chooser)
    assert venv.games.opponents == [keep]
    venv.reset()
    play_vec(venv, 5, np.random.default_rng(0))


@pytest.mark.parametrize("wrapped", [True, False])
@pytest.mark.parametrize("action", [True, np.True_, 1.0])
def test_aec__bool_or_float_action_is_refused(wrapped, action):
    game = env(num_players=2) if wrapped else raw_env(num_players=2)
    game.reset(seed=0)
    before = state_copy(game.unwrapped.batch)
    # the wrapper refuses what Discrete does not contain first (AssertionError, PettingZoo's way)
    expected = AssertionError if wrapped and action is not True else TypeError
    with pytest.raises(expected):
        game.step(action)
    assert_same_state(game.unwrapped.batch, before)

"""State export/import of the batched VecEnv and the single-agent Gym view: an imported env
steps exactly like the exported one, and a damaged state is refused with a named error
before anything changes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.registry import make_agent
from skyjo_env import RandomAgent, SkyjoVecEnv
from skyjo_env.core import layout
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import sample_legal
from skyjo_env.single_agent import SkyjoGymEnv

from .helpers import WithoutActOnFeatures

RULES = SkyjoRules(num_players=3, target_score=40)
NUM_ENVS = 6


class Mix:
    """A chooser: per game, each opponent seat random or greedy (from the env's generator)."""

    def __init__(self, agents: dict):
        self.agents = agents

    def __call__(self, rng: np.random.Generator) -> list:
        names = sorted(self.agents)
        return [self.agents[names[rng.integers(len(names))]] for _ in range(RULES.num_players - 1)]


def _agents(seed: int) -> dict:
    return {"random": RandomAgent(seed), "greedy": make_agent("greedy", RULES, seed=seed + 1)}


def _env(agents: dict, seed: int | None = 7) -> SkyjoVecEnv:
    return SkyjoVecEnv(NUM_ENVS, rules=RULES, opponents=Mix(agents), seed=seed)


def _key_of(agents: dict):
    return lambda agent: next(name for name, known in agents.items() if known is agent)


def _exported_mid_game(steps: int = 37):
    """An env stepped ``steps`` times, its agents, the exported state (through JSON) and
    the generator that chose its actions."""
    agents = _agents(100)
    env = _env(agents)
    env.reset()
    actions_rng = np.random.default_rng(5)
    for _ in range(steps):
        env.step(sample_legal(env.action_masks(), actions_rng))
    meta, arrays = env.export_state(_key_of(agents))
    return env, agents, json.loads(json.dumps(meta)), arrays, actions_rng


def test_vec_env_export_state__imported_env_steps_identically():
    source, agents, meta, arrays, actions_rng = _exported_mid_game()
    copies = _agents(999)  # other seeds: the opponents' own state is copied below
    target = _env(copies, seed=12345)  # a different seed: the import must override it
    target.reset()  # (the copies play here: their generators are set only afterwards)
    target.import_state(meta, arrays, copies.__getitem__)
    copies["random"].rng.bit_generator.state = agents["random"].rng.bit_generator.state
    np.testing.assert_array_equal(target.action_masks(), source.action_masks())
    np.testing.assert_array_equal(target.games.observe(), source.games.observe())
    dones_seen = 0
    for _ in range(300):
        actions = sample_legal(source.action_masks(), actions_rng)
        expected = source.step(actions)
        got = target.step(actions)
        for want, have in zip(expected[:3], got[:3], strict=True):
            np.testing.assert_array_equal(have, want)
        np.testing.assert_array_equal(target.action_masks(), source.action_masks())
        np.testing.assert_array_equal(target.learner_seat, source.learner_seat)
        for want, have in zip(expected[3], got[3], strict=True):
            assert have.get("episode_end") == want.get("episode_end")
        dones_seen += int(expected[2].sum())
    assert dones_seen > 0  # games ended and restarted (chooser, seats, streams) after import


def test_vec_env_export_state__default_opponent_and_pending_seeds_round_trip():
    source = SkyjoVecEnv(3, rules=RULES, seed=4)
    source.reset()
    actions_rng = np.random.default_rng(0)
    for _ in range(20):
        source.step(sample_legal(source.action_masks(), actions_rng))
    source.seed(50)  # pending: the next reset deals from 50 + i
    meta, arrays = source.export_state()
    target = SkyjoVecEnv(3, rules=RULES)
    target.import_state(json.loads(json.dumps(meta)), arrays)
    np.testing.assert_array_equal(target.reset(), source.reset())
    for _ in range(50):
        actions = sample_legal(source.action_masks(), actions_rng)
        np.testing.assert_array_equal(target.step(actions)[0], source.step(actions)[0])


def _damaged(arrays: dict, name: str, change) -> dict:
    damaged = dict(arrays)
    damaged[name] = change(arrays[name].copy())
    return damaged


def _set(index, value):
    def change(array):
        array[index] = value
        return array
    return change


@pytest.mark.parametrize("name, change, message", [
    ("batch_grid", lambda a: a[:, :, :-1], "'batch_grid' must be int16 of shape"),
    ("batch_game", lambda a: a.astype(np.int64), "'batch_game' must be int32"),
    ("games_masks", lambda a: a.tolist(), "'games_masks' must be bool"),
    ("batch_game", _set((0, layout.CURRENT), 9),
     "'batch_game' holds values outside 0 .. 2 (column CURRENT)"),
    ("batch_game", _set((1, layout.DRAW_SIZE), 10_000), "'batch_game' holds values outside"),
    ("batch_slot_state", _set((0, 0, 0), 7), "'batch_slot_state' holds values outside"),
    ("games_learner_seat", _set(2, -1), "'games_learner_seat' holds values outside"),
    ("games_assignment", _set((0, 0), 5), "'games_assignment' holds values outside"),
    ("games_masks", lambda a: ~a, "'games_masks' is not the games' legal actions"),
])
def test_vec_env_import_state__bad_array_is_named_and_changes_nothing(name, change, message):
    _, agents, meta, arrays, _ = _exported_mid_game(steps=5)
    target = _env(agents, seed=3)
    before = target.reset()
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        target.import_state(meta, _damaged(arrays, name, change), agents.__getitem__)
    np.testing.assert_array_equal(target.games.observe(), before)


def test_vec_env_import_state__missing_array_or_meta_entry_is_named():
    _, agents, meta, arrays, _ = _exported_mid_game(steps=5)
    target = _env(agents)
    missing = {k: v for k, v in arrays.items() if k != "batch_rng"}
    with pytest.raises(ValueError, match="state array 'batch_rng' is missing"):
        target.import_state(meta, missing, agents.__getitem__)
    with pytest.raises(ValueError, match="state meta has no 'rng'"):
        target.import_state({k: v for k, v in meta.items() if k != "rng"}, arrays,
                            agents.__getitem__)
    with pytest.raises(ValueError, match="state meta 'rng' is not a PCG64 generator state"):
        target.import_state({**meta, "rng": {"bit_generator": "MT19937"}}, arrays,
                            agents.__getitem__)


def test_vec_env_import_state__other_rules_or_no_chooser_refused():
    _, agents, meta, arrays, _ = _exported_mid_game(steps=5)
    other = SkyjoVecEnv(NUM_ENVS, rules=RULES.replace(target_score=41), opponents=Mix(agents))
    with pytest.raises(ValueError, match="state meta 'rules' is"):
        other.import_state(meta, arrays, agents.__getitem__)
    fixed = SkyjoVecEnv(NUM_ENVS, rules=RULES, opponents=agents["random"])
    with pytest.raises(ValueError, match="exported with an opponent chooser"):
        fixed.import_state(meta, arrays, agents.__getitem__)


def test_vec_env_import_state__opponent_offering_unusable_sharing_is_named_and_changes_nothing():
    _, agents, meta, arrays, _ = _exported_mid_game(steps=5)
    target = _env(agents, seed=3)
    before = target.reset()
    restored = {**agents, "random": WithoutActOnFeatures()}
    with pytest.raises(ValueError, match="opponent agent 'half' offers shared_features but no "
                                         r"act_on_features\(features, action_masks\)"):
        target.import_state(meta, arrays, restored.__getitem__)
    np.testing.assert_array_equal(target.games.observe(), before)


def test_vec_env_export_state__unnamed_opponent_refused():
    env = SkyjoVecEnv(2, rules=RULES, opponents=RandomAgent(0, name="mine"))
    with pytest.raises(ValueError, match="opponent agent 'mine' needs a name"):
        env.export_state()
    env.step_async(np.zeros(2, np.int64))
    with pytest.raises(RuntimeError, match="between step_async and step_wait"):
        env.export_state(lambda agent: "x")


# ------------------------------------------------------------------ the Gym view


def _play_gym(env: SkyjoGymEnv, actions_rng: np.random.Generator, steps: int) -> list:
    """``steps`` legal learner moves (resetting after an episode end, without a seed: the
    env's own ``np_random`` picks the next game and seat); every step's output."""
    seen = []
    for _ in range(steps):
        observation, reward, terminated, truncated, info = env.step(
            int(sample_legal(env.action_masks()[None], actions_rng)[0]))
        seen.append((observation, reward, terminated, truncated, info))
        if terminated or truncated:
            seen.append(env.reset())
    return seen


def _copy_generator(rng: np.random.Generator) -> np.random.Generator:
    copy = np.random.default_rng()
    copy.bit_generator.state = rng.bit_generator.state
    return copy


def _assert_same_outputs(expected: list, got: list) -> None:
    assert len(got) == len(expected)
    for want, have in zip(expected, got, strict=True):
        np.testing.assert_array_equal(have[0], want[0])
        assert have[1:] == want[1:]


def test_gym_env_export_state__imported_env_plays_and_resets_identically():
    agents = _agents(100)
    source = SkyjoGymEnv(rules=RULES, opponents=[agents["greedy"], agents["random"]])
    source.reset(seed=3)
    actions_rng = np.random.default_rng(5)
    _play_gym(source, actions_rng, 25)
    meta, arrays = source.export_state(_key_of(agents))
    meta = json.loads(json.dumps(meta))
    copies = _agents(999)
    target = SkyjoGymEnv(rules=RULES, opponents=[copies["greedy"], copies["random"]])
    target.reset(seed=77)  # another game: the import must replace it
    target.import_state(meta, arrays, copies.__getitem__)
    copies["random"].rng.bit_generator.state = agents["random"].rng.bit_generator.state
    np.testing.assert_array_equal(target.action_masks(), source.action_masks())
    assert target.learner_seat == source.learner_seat
    target_rng = _copy_generator(actions_rng)
    expected = _play_gym(source, actions_rng, 400)
    got = _play_gym(target, target_rng, 400)
    assert sum(len(entry) == 2 for entry in expected) >= 2  # games ended and were redealt
    _assert_same_outputs(expected, got)


def test_gym_env_export_state__default_opponent_round_trips():
    source = SkyjoGymEnv(rules=RULES)
    source.reset(seed=8)
    actions_rng = np.random.default_rng(1)
    _play_gym(source, actions_rng, 10)
    meta, arrays = source.export_state()
    target = SkyjoGymEnv(rules=RULES)
    target.import_state(json.loads(json.dumps(meta)), arrays)
    target_rng = _copy_generator(actions_rng)
    _assert_same_outputs(_play_gym(source, actions_rng, 200), _play_gym(target, target_rng, 200))


def test_gym_env_import_state__refused_state_is_named_and_changes_nothing():
    source = SkyjoGymEnv(rules=RULES)
    source.reset(seed=8)
    meta, arrays = source.export_state()
    target = SkyjoGymEnv(rules=RULES)
    before, _ = target.reset(seed=9)
    seat = target.learner_seat
    cases = [
        ({k: v for k, v in meta.items() if k != "np_random"}, arrays, "state meta has no 'np_random'"),
        ({**meta, "np_random": {"bit_generator": "MT19937"}}, arrays,
         "state meta 'np_random' is not a PCG64 generator state"),
        ({**meta, "owns_opponent": "yes"}, arrays, "state meta 'owns_opponent' must be a bool"),
        (meta, _damaged(arrays, "games_learner_seat", _set(0, 7)),
         "'games_learner_seat' holds values outside"),
        ("not a dict", arrays, "state meta must be a dict, got str"),
    ]
    for bad_meta, bad_arrays, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            target.import_state(bad_meta, bad_arrays)
        np.testing.assert_array_equal(target._observation(), before)
        assert target.learner_seat == seat
    other = SkyjoGymEnv(rules=RULES.replace(target_score=41))
    with pytest.raises(ValueError, match="state meta 'rules' is"):
        other.import_state(meta, arrays)


def test_gym_env_export_state__unnamed_opponent_refused():
    env = SkyjoGymEnv(rules=RULES, opponents=RandomAgent(0, name="mine"))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="opponent agent 'mine' needs a name"):
        env.export_state()
    with pytest.raises(ValueError, match="reserved name"):
        env.export_state(lambda agent: "skyjo_vec_env:default_random")

"""Agent specs -> agents: built-ins, import paths, PPO checkpoints and clear errors."""

from __future__ import annotations

import shutil
import sys
import textwrap
import types

import numpy as np
import pytest

from agents.registry import AgentSpecError, best_network, make_agent
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder, ObservationLayout
from skyjo_env.protocol import RandomAgent

RULES = SkyjoRules()

FAKE_MODULE = textwrap.dedent(
    '''
    import numpy as np


    class WithRulesAndSeed:
        def __init__(self, rules, seed):
            self.rules, self.seed, self.name = rules, seed, "with-rules"

        def act(self, observations, action_masks):
            return np.asarray(action_masks).argmax(axis=1).astype(np.int64)


    class NoArgs:
        name = "no-args"

        def act(self, observations, action_masks):
            return np.asarray(action_masks).argmax(axis=1).astype(np.int64)


    class NoAct:
        name = "no-act"


    class NoName:
        def act(self, observations, action_masks):
            return np.zeros(len(action_masks), np.int64)


    class Broken:
        def __init__(self):
            raise RuntimeError("boom")


    class OneArgAct:
        name = "one-arg"

        def act(self, observations):
            return np.zeros(len(observations), np.int64)


    class ActNotCallable:
        name = "not-callable"
        act = 3


    NOT_A_CLASS = 3
    '''
)


@pytest.fixture
def fake_module(tmp_path, monkeypatch):
    """A throwaway importable module ``skyjo_fake_agents`` with assorted classes."""
    (tmp_path / "skyjo_fake_agents.py").write_text(FAKE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "skyjo_fake_agents", raising=False)
    yield "skyjo_fake_agents"
    sys.modules.pop("skyjo_fake_agents", None)


def _legal_actions_ok(agent, rules=RULES) -> bool:
    from skyjo_env.core.engine import legal_action_mask, new_batch, reset

    state = new_batch(rules, 8)
    reset(state, list(range(8)))
    masks = legal_action_mask(state)
    observations = ObservationEncoder(rules).encode(state, state.current_player)
    actions = np.asarray(agent.act(observations, masks))
    return actions.shape == (8,) and bool(masks[np.arange(8), actions].all())


def test_make_agent__random_is_seeded_random_agent():
    first, second = make_agent("random", RULES, 7), make_agent("random", RULES, 7)
    assert isinstance(first, RandomAgent) and first.name == "random"
    masks = np.ones((50, 27), bool)
    observations = np.zeros((50, 1), np.float32)
    assert np.array_equal(first.act(observations, masks), second.act(observations, masks))


@pytest.mark.parametrize("spec", ["greedy", "ev"])
def test_make_agent__heuristics_by_name(spec):
    agent = make_agent(spec, RULES, 0)
    assert agent.name == spec
    assert _legal_actions_ok(agent)


def test_make_agent__import_path_passes_rules_and_seed(fake_module):
    agent = make_agent(f"{fake_module}:WithRulesAndSeed", RULES, 11)
    assert agent.rules is RULES and agent.seed == 11 and agent.name == "with-rules"
    assert _legal_actions_ok(agent)


def test_make_agent__import_path_without_arguments(fake_module):
    agent = make_agent(f"{fake_module}:NoArgs", RULES, 11)
    assert agent.name == "no-args"


def test_make_agent__builtin_class_by_import_path():
    agent = make_agent("agents.baselines.heuristics:GreedyAgent", RULES, 0)
    assert agent.name == "greedy"


@pytest.mark.parametrize(
    "cls, words",
    [
        ("NoAct", "no act()"),
        ("NoName", "'name'"),
        ("Broken", "boom"),
        ("NOT_A_CLASS", "not a class"),
        ("Missing", "no attribute 'Missing'"),
        ("OneArgAct", "OneArgAct.act(observations) cannot be called as "
                      "act(observations, action_masks)"),
        ("ActNotCallable", "ActNotCallable has no act() method"),
    ],
)
def test_make_agent__bad_class_is_a_clear_error(fake_module, cls, words):
    with pytest.raises(AgentSpecError, match="agent spec") as error:
        make_agent(f"{fake_module}:{cls}", RULES, 0)
    assert words in str(error.value)
    assert isinstance(error.value, ValueError)


def test_make_agent__bad_module_path():
    with pytest.raises(ValueError, match="cannot import module 'no_such_package.mod'"):
        make_agent("no_such_package.mod:Agent", RULES, 0)


@pytest.mark.parametrize("spec", ["", "nonsense", "a:b:c", "mod:", ":Cls", "1mod:Cls", "Random"])
def test_make_agent__unknown_spec_lists_valid_forms(spec):
    with pytest.raises(ValueError, match="valid forms") as error:
        make_agent(spec, RULES, 0)
    assert "ppo:PATH" in str(error.value) and "package.module:ClassName" in str(error.value)


def test_make_agent__ppo_missing_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        make_agent(f"ppo:{tmp_path / 'nope.zip'}", RULES, 0)


def test_make_agent__ppo_empty_path():
    with pytest.raises(ValueError, match="checkpoint path"):
        make_agent("ppo:", RULES, 0)


def test_make_agent__ppo_without_training_module(tmp_path, monkeypatch):
    checkpoint = tmp_path / "model.zip"
    checkpoint.write_bytes(b"not really")
    monkeypatch.setitem(sys.modules, "agents.ppo", None)  # import agents.ppo now fails
    with pytest.raises(ValueError, match="PPO checkpoints need the training module agents.ppo"):
        make_agent(f"ppo:{checkpoint}", RULES, 0)


def _fake_ppo_module(loader) -> types.ModuleType:
    module = types.ModuleType("agents.ppo")
    module.load_ppo_agent = loader
    return module


def test_make_agent__ppo_calls_the_loader(tmp_path, monkeypatch):
    checkpoint = tmp_path / "model.zip"
    checkpoint.write_bytes(b"weights")
    calls = []

    def loader(path, rules, seed):
        calls.append((str(path), rules, seed))
        return RandomAgent(seed, name="ppo")

    monkeypatch.setitem(sys.modules, "agents.ppo", _fake_ppo_module(loader))
    agent = make_agent(f"ppo:{checkpoint}", RULES, 5)
    assert agent.name == "ppo"
    assert calls == [(str(checkpoint), RULES, 5)]


def test_make_agent__ppo_corrupt_checkpoint(tmp_path, monkeypatch):
    checkpoint = tmp_path / "model.zip"
    checkpoint.write_bytes(b"garbage")

    def loader(path, rules, seed):
        raise OSError("not a zip file")

    monkeypatch.setitem(sys.modules, "agents.ppo", _fake_ppo_module(loader))
    with pytest.raises(ValueError, match="cannot load checkpoint .*not a zip file"):
        make_agent(f"ppo:{checkpoint}", RULES, 0)


# ---------------------------------------------------------------- ppo:best


def test_make_agent__ppo_best_is_the_strongest_shipped_network_for_the_table_size():
    from agents.registry import MODELS_DIR, best_network, checkpoint_path

    for players, name in ((2, "ppo_2p_long_ev"), (4, "ppo_4p_long")):
        rules = SkyjoRules().replace(num_players=players)
        assert best_network(players) == MODELS_DIR / f"{name}.zip"
        assert checkpoint_path("search:ppo:best", players) == str(MODELS_DIR / f"{name}.zip")
        agent = make_agent("ppo:best", rules, seed=0)
        assert agent.policy.observation_space.shape[0] == ObservationLayout(rules).size
    assert checkpoint_path("ppo:best") == "best"


def test_make_agent__search_over_ppo_best_reads_the_network_it_loads():
    agent = make_agent("search(samples=2,depth=2,leaf=critic):ppo:best", SkyjoRules(), seed=0)
    assert agent.name


def test_make_agent__ppo_best_without_a_network_for_the_table_is_one_line():
    with pytest.raises(AgentSpecError) as caught:
        make_agent("ppo:best", SkyjoRules().replace(num_players=9), seed=0)
    message = str(caught.value)
    assert "\n" not in message
    assert ("no shipped network plays 9 players (models/ has them for 2, 3, 4, 5, 6, 7, 8)"
            in message)
    assert "a config of num_players: 9 (the recipes cover 2 to 8 players)" in message


def test_best_network__a_size_with_a_recipe_but_no_network_names_its_recipe(tmp_path):
    with pytest.raises(AgentSpecError, match=r"train one with python train.py --config "
                       r"configs/recipes/5p.yaml and name it ppo:PATH"):
        best_network(5, models_dir=tmp_path)


def test_make_agent__ppo_best_loads_the_card_marked_strongest_at_3_5_6_7_and_8_players():
    for players in (3, 5, 6, 7, 8):
        agent = make_agent("ppo:best", SkyjoRules().replace(num_players=players), seed=0)
        assert agent.name.endswith(f"ppo_{players}p"), agent.name


def test_best_network__two_cards_marked_strongest_for_one_size_are_refused(tmp_path):
    from agents.registry import best_network

    for name in ("a", "b"):
        (tmp_path / f"{name}.zip").write_bytes(b"")
        (tmp_path / f"{name}.md").write_text("---\nplayers: 2\nstrongest: true\n---\n# x\n")
    with pytest.raises(AgentSpecError, match="2 shipped networks say they are the strongest"):
        best_network(2, tmp_path)


def test_ppo_agent_name__a_runs_best_zip_is_named_with_its_run_not_as_ppo_best(tmp_path):
    from agents.registry import MODELS_DIR

    shipped = MODELS_DIR / "ppo_2p.zip"
    run_best = tmp_path / "recipe_2p" / "best.zip"
    run_best.parent.mkdir()
    shutil.copy(shipped, run_best)
    rules = SkyjoRules()
    assert make_agent(f"ppo:{run_best}", rules, 0).name == "ppo:recipe_2p/best"
    assert make_agent(f"ppo:{shipped}", rules, 0).name == "ppo:ppo_2p"

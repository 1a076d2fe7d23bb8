"""A training start checks its config once and hands down what it resolved: the rules
file is read once, each evaluation opponent is built once per evaluation (the check's
build serves the first), the imitation teacher once to check it and once per chunk of
games."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml

import skyjo_env.core.rules as rules_module
from agents.cli.train import main as train_main
from agents.training.config import TrainConfig
from agents.training.evaluator import EvaluationOpponents
from agents.training.start import prepare_start

COUNTING_MODULE = '''
from skyjo_env.protocol import RandomAgent

BUILT = []


class Opponent(RandomAgent):
    def __init__(self, rules, seed):
        BUILT.append("opponent")
        super().__init__(seed, name="opponent")


class Teacher(RandomAgent):
    def __init__(self, rules, seed):
        BUILT.append("teacher")
        super().__init__(seed, name="teacher")
'''


@pytest.fixture
def counting_agents(tmp_path, monkeypatch):
    """An importable module ``skyjo_counting_agents`` whose agents record each build."""
    (tmp_path / "skyjo_counting_agents.py").write_text(COUNTING_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "skyjo_counting_agents", raising=False)
    import skyjo_counting_agents

    yield skyjo_counting_agents.BUILT
    sys.modules.pop("skyjo_counting_agents", None)


@pytest.fixture
def rules_reads(monkeypatch) -> list[str]:
    """The paths of the rules files read from now on (every `load_rules` reads one)."""
    reads = []
    read = rules_module.read_yaml_mapping

    def counted(path, what, entry):
        if what == "rules file":
            reads.append(str(path))
        return read(path, what, entry)

    monkeypatch.setattr(rules_module, "read_yaml_mapping", counted)
    return reads


def test_training_start__reads_the_rules_once_and_builds_each_agent_once(
    tmp_path, counting_agents, rules_reads
):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({
        "total_timesteps": 1024, "n_envs": 16, "n_steps": 64, "batch_size": 512,
        "n_epochs": 1, "net_arch": [16], "eval_interval": 0, "eval_games": 2,
        "checkpoint_interval": 4096, "imitation_games": 4, "imitation_epochs": 1,
        "imitation_teacher": "skyjo_counting_agents:Teacher",
        "eval_opponents": ["skyjo_counting_agents:Opponent", "greedy"],
    }))
    status = train_main(["--config", str(config), "--run-dir", str(tmp_path / "run"),
                         "--no-progress"])
    assert status == 0
    assert len((tmp_path / "run" / "eval.jsonl").read_text().splitlines()) == 1
    assert len(rules_reads) == 1
    # 2 players: one opponent seat, one evaluation; the teacher: the check, one chunk
    assert counting_agents.count("opponent") == 1
    assert counting_agents.count("teacher") == 2


def test_evaluation_opponents__each_take_is_a_fresh_set_seeded_alike():
    rules = TrainConfig().resolve_rules()
    opponents = EvaluationOpponents(["random", "greedy"], rules, seed=7)
    first, second = opponents.take(), opponents.take()
    assert list(first) == list(second) == ["random", "greedy"]
    assert first["random"][0] is not second["random"][0]
    masks = np.ones((5, 27), dtype=bool)
    observations = np.zeros((5, 1), dtype=np.float32)
    assert np.array_equal(first["random"][0].act(observations, masks),
                          second["random"][0].act(observations, masks))


def test_prepare_start__hands_down_the_rules_the_config_validation_loaded(rules_reads):
    config = TrainConfig(num_players=3, imitation_games=0, eval_opponents=["random"])
    assert len(rules_reads) == 1  # the config's validation
    start = prepare_start(config)
    assert start.rules is config.resolve_rules()
    assert start.rules.num_players == 3 and start.initial_network is None
    assert len(rules_reads) == 1

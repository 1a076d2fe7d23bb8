"""Training layer: config validation, a tiny run's outputs, resume, checkpoint errors."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from small_runs import SMALL_RUN

from agents.cli.evaluate import main as evaluate_main
from agents.evaluation.tournament import play_tournament
from agents.ppo.checkpoint import CheckpointError, load_policy, read_metadata
from agents.ppo.policy import PPOAgent, load_ppo_agent
from agents.registry import make_agent
from agents.training.config import TrainConfig, load_train_config
from agents.training.start import prepare_start
from agents.training.trainer import Trainer, train
from skyjo_env.core.rules import SkyjoRules, load_rules
from skyjo_env.encoding import OBSERVATION_VERSION

ROOT = Path(__file__).resolve().parents[2]

TINY = dict(SMALL_RUN, total_timesteps=2048, checkpoint_interval=1024)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    summary = train(TrainConfig(**TINY), run_dir)
    return run_dir, summary


def test_train_config__unknown_key_is_an_error():
    with pytest.raises(ValueError, match="unknown training config key.*'n_env'"):
        TrainConfig.from_dict({"n_env": 4})


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"n_envs": 0}, "n_envs"),
        ({"opponent_mix": {"ev": 1.0, "alien": 1.0}}, "opponent_mix"),
        ({"opponent_mix": {"ev": 0.0}}, "opponent_mix"),
        ({"activation": "gelu"}, "activation"),
        ({"batch_size": 10**6}, "batch_size"),
        ({"rules": "no-such-preset"}, "no-such-preset"),
    ],
)
def test_train_config__bad_values_name_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**changes)


def test_load_train_config__yaml_then_overrides(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({"n_envs": 128, "seed": 3}))
    config = load_train_config(path, seed=9, total_timesteps=None)
    assert (config.n_envs, config.seed) == (128, 9)
    assert config.total_timesteps == TrainConfig().total_timesteps


def test_shipped_configs__load_and_validate():
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        config = load_train_config(path)
        assert config.resolve_rules().num_players == config.num_players


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_train__tiny_run_writes_events_checkpoints_and_config(tiny_run):
    run_dir, summary = tiny_run
    assert summary["timesteps"] >= TINY["total_timesteps"]
    assert list((run_dir / "tb").rglob("events.out.tfevents*")), "no TensorBoard events"
    assert (run_dir / "checkpoints" / "last.zip").is_file()
    assert (run_dir / "best.zip").is_file()
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert TrainConfig.from_dict(saved) == TrainConfig(**TINY)
    evaluations = [json.loads(line) for line in (run_dir / "eval.jsonl").read_text().splitlines()]
    assert [e["timesteps"] for e in evaluations][-1] == summary["timesteps"]
    assert set(evaluations[0]["results"]) == {"greedy", "ev"}
    metadata = read_metadata(run_dir / "checkpoints" / "last.zip")
    assert metadata["timesteps"] == summary["timesteps"]
    assert metadata["observation_version"] == OBSERVATION_VERSION
    assert SkyjoRules.from_dict(metadata["rules"]) == SkyjoRules()


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_train__tensorboard_has_eval_scalars(tiny_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, _ = tiny_run
    events = EventAccumulator(str(next((run_dir / "tb").iterdir())))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"eval/win_rate_vs_greedy", "eval/win_rate_vs_ev", "eval/score"} <= tags
    assert "train/value_loss" in tags


def _win_rate_vs_greedy(agent: PPOAgent) -> float:
    greedy = make_agent("greedy", SkyjoRules(), seed=1)
    outcome = play_tournament([agent, greedy], SkyjoRules(), 40, 5, progress=False, ratings=False)
    return outcome.agents[0].win_rate


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_train__tiny_run_learns_to_beat_greedy(tiny_run):
    """The tiny run (warm start on 3000 ev games, then two PPO rollouts) plays far better
    than its untrained network: measured 71% against greedy, the untrained one 0%."""
    run_dir, _ = tiny_run
    trained = _win_rate_vs_greedy(PPOAgent(load_policy(run_dir / "checkpoints" / "last.zip"),
                                           name="trained"))
    untrained = Trainer(prepare_start(TrainConfig(**TINY)), run_dir / "untrained")
    untrained.build_env()
    fresh = _win_rate_vs_greedy(PPOAgent(untrained.build_model(), name="untrained"))
    assert trained >= 0.5 and fresh <= 0.2 and trained - fresh >= 0.4, (trained, fresh)


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_evaluate_cli__loads_a_trained_checkpoint(tiny_run, tmp_path):
    run_dir, _ = tiny_run
    report = tmp_path / "report.json"
    code = evaluate_main(
        ["--agents", f"ppo:{run_dir / 'best.zip'}", "greedy", "--games", "4", "--seed", "1",
         "--json", str(report), "--no-progress"]
    )
    assert code == 0
    data = json.loads(report.read_text())
    assert data["agents"][0]["spec"].startswith("ppo:")
    assert data["games"] == 4


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_ppo_agent__acts_legally_on_any_mask(tiny_run):
    run_dir, _ = tiny_run
    agent = load_ppo_agent(run_dir / "best.zip", SkyjoRules())
    assert isinstance(agent, PPOAgent)
    rng = np.random.default_rng(0)
    masks = rng.random((64, 27)) < 0.2
    masks[np.arange(64), rng.integers(0, 27, 64)] = True
    observations = rng.random((64, agent.policy.observation_space.shape[0])).astype(np.float32)
    actions = agent.act(observations, masks)
    assert masks[np.arange(64), actions].all()


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_load_ppo_agent__rejects_other_rules(tiny_run):
    run_dir, _ = tiny_run
    with pytest.raises(CheckpointError, match="trained for other rules.*row_elimination"):
        load_ppo_agent(run_dir / "best.zip", load_rules("online"))
    with pytest.raises(CheckpointError, match="num_players"):
        load_ppo_agent(run_dir / "best.zip", SkyjoRules(num_players=3))


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_load_ppo_agent__rejects_another_observation_layout(tiny_run, tmp_path):
    run_dir, _ = tiny_run
    tampered = tmp_path / "old_layout.zip"
    with zipfile.ZipFile(run_dir / "best.zip") as source, zipfile.ZipFile(tampered, "w") as target:
        for item in source.namelist():
            data = source.read(item)
            if item == "skyjo_meta.json":
                meta = json.loads(data)
                meta["observation_version"] = OBSERVATION_VERSION + 1
                # an older file: one of format /3 would fail its checksum first
                meta["format"] = "skyjo-rl-ppo/2"
                del meta["integrity"]
                data = json.dumps(meta).encode()
            target.writestr(item, data)
    with pytest.raises(CheckpointError, match="observation layout version"):
        load_ppo_agent(tampered, SkyjoRules())


def test_load_ppo_agent__missing_corrupt_and_foreign_files(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_ppo_agent(tmp_path / "nope.zip", SkyjoRules())
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(b"this is not a zip file at all")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_ppo_agent(corrupt, SkyjoRules())
    foreign = tmp_path / "foreign.zip"
    with zipfile.ZipFile(foreign, "w") as archive:
        archive.writestr("data", "{}")
    with pytest.raises(CheckpointError, match="not a skyjo-rl checkpoint"):
        load_ppo_agent(foreign, SkyjoRules())


@pytest.mark.slow  # the tiny training run (about 30 s)
def test_load_ppo_agent__truncated_checkpoint_is_corrupt(tiny_run, tmp_path):
    run_dir, _ = tiny_run
    truncated = tmp_path / "truncated.zip"
    data = (run_dir / "best.zip").read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt"):
        load_ppo_agent(truncated, SkyjoRules())


@pytest.mark.slow  # training runs
def test_trainer__resume_continues_from_the_last_checkpoint(tmp_path):
    config = TrainConfig(**{**TINY, "total_timesteps": 1024, "eval_interval": 0, "imitation_games": 0})
    first = train(config, tmp_path)
    assert first["timesteps"] == 1024
    longer = TrainConfig(**{**TINY, "total_timesteps": 3072, "eval_interval": 0, "imitation_games": 0})
    trainer = Trainer(prepare_start(longer, resume=True), tmp_path)
    summary = trainer.run()
    # one rollout is n_envs * n_steps = 1024 steps: 2 more rollouts, not 3
    assert summary["timesteps"] == 3072
    assert read_metadata(tmp_path / "checkpoints" / "last.zip")["timesteps"] == 3072


def test_train_cli__refuses_to_overwrite_or_resume_nothing(tmp_path, capsys):
    from agents.cli.train import main

    assert main(["--run-dir", str(tmp_path / "empty"), "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    (tmp_path / "taken" / "checkpoints").mkdir(parents=True)
    (tmp_path / "taken" / "checkpoints" / "last.zip").write_bytes(b"x")
    assert main(["--run-dir", str(tmp_path / "taken")]) == 2
    assert "already holds a run" in capsys.readouterr().err


def test_train_cli__corrupt_checkpoint_on_resume_is_a_clear_error(tmp_path, capsys):
    from agents.cli.train import main

    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.zip").write_bytes(b"garbage")
    (run_dir / "config.yaml").write_text(yaml.safe_dump(TINY))
    assert main(["--run-dir", str(run_dir), "--resume"]) == 2
    assert "corrupt" in capsys.readouterr().err


def test_train_cli__bad_config_is_a_clear_error(tmp_path, capsys):
    from agents.cli.train import main

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"n_envs": 4, "learning_rat": 0.1}))
    assert main(["--config", str(path), "--run-dir", str(tmp_path / "r")]) == 2
    assert "learning_rat" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()

"""A new run from the end of an earlier run's stage (``train.py --from-stage``): every
staged run keeps its stage-end checkpoints, a config whose first stages are that run's
continues from one and ends exactly like the same config trained from scratch, and a
start that cannot be that run is refused in one line before any work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from checkpoint_edits import edit_metadata, edit_state
from run_logs import evaluations, scalars
from small_runs import WARM_STARTED_RUN

from agents.cli.train import main as train_main
from agents.ppo.checkpoint import load_policy, read_metadata
from agents.training.config import TrainConfig
from agents.training.from_stage import FROM_STAGE_RECORD, stage_end_checkpoint
from agents.training.trainer import train

ROOT = Path(__file__).resolve().parents[2]

BASE = dict(
    WARM_STARTED_RUN,
    checkpoint_interval=1024,
    value_warmup_rollouts=1,
    eval_opponents=["greedy"],
)
GRID = {"name": "grid", "total_timesteps": 2048}
# 2000 steps: its last rollout (1024 steps each) overshoots them, to 4096
FEEDING = {"name": "feeding", "total_timesteps": 2000, "features": "grid_feeding",
           "learning_rate": 1e-4, "opponent_mix": {"ev": 0.5, "self": 0.5}}
#: the earlier run: two stages
EARLIER = {**BASE, "stages": [GRID, FEEDING]}
#: its second stage changed (from the end of stage 1)
CHANGED = {**BASE, "stages": [GRID, {**FEEDING, "learning_rate": 3e-4}]}
#: a third stage added (from the end of stage 2, the earlier run's end)
LONGER = {**BASE, "stages": [GRID, FEEDING, {"name": "hot", "total_timesteps": 1024,
                                             "features": "grid_feeding",
                                             "learning_rate": 4e-4}]}


def _assert_same_run(one: Path, other: Path) -> None:
    assert evaluations(one) == evaluations(other)
    weights = [load_policy(d / "checkpoints" / "last.zip").state_dict() for d in (one, other)]
    for name, tensor in weights[0].items():
        assert torch.equal(tensor, weights[1][name]), name
    assert read_metadata(one / "best.zip")["score"] == read_metadata(other / "best.zip")["score"]
    assert scalars(one) == scalars(other)


def _write(tmp_path: Path, name: str, config: dict) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _from_stage(tmp_path: Path, config: dict, checkpoint: Path, run_dir: Path,
                *extra: str) -> int:
    return train_main(["--config", str(_write(tmp_path, "config", config)), "--run-dir",
                       str(run_dir), "--from-stage", str(checkpoint), "--no-progress", *extra])


@pytest.fixture(scope="module")
def earlier(tmp_path_factory) -> Path:
    """The earlier run, two stages, never stopped."""
    run_dir = tmp_path_factory.mktemp("from_stage") / "earlier"
    train(TrainConfig(**EARLIER), run_dir)
    return run_dir


@pytest.mark.slow
def test_staged_run__keeps_the_checkpoint_and_best_of_each_stage_end(earlier):
    for number, steps in ((1, 2048), (2, 4096)):
        kept = read_metadata(stage_end_checkpoint(earlier, number))
        assert kept["stage"]["number"] == number and kept["timesteps"] == steps
        assert kept["run_config"]["stages"] == EARLIER["stages"]
        assert (earlier / "checkpoints" / f"stage_{number}.best.zip").is_file()
    # the last stage's end is the run's end: its kept checkpoint is last.zip's weights
    final = load_policy(earlier / "checkpoints" / "last.zip").state_dict()
    kept = load_policy(stage_end_checkpoint(earlier, 2)).state_dict()
    assert all(torch.equal(final[name], kept[name]) for name in final)


@pytest.mark.slow
@pytest.mark.parametrize("config, number", [(CHANGED, 1), (LONGER, 2)],
                         ids=["a_changed_second_stage", "an_added_third_stage"])
def test_from_stage__ends_exactly_like_the_same_config_from_scratch(
        earlier, tmp_path, config, number):
    whole = tmp_path / "whole"
    train(TrainConfig(**config), whole)
    continued = tmp_path / "continued"
    assert _from_stage(tmp_path, config, stage_end_checkpoint(earlier, number), continued) == 0
    _assert_same_run(continued, whole)
    record = json.loads((continued / FROM_STAGE_RECORD).read_text())
    assert (record["stage"], record["name"]) == (number, ["grid", "feeding"][number - 1])
    assert TrainConfig.from_dict(yaml.safe_load((continued / "config.yaml").read_text())) == \
        TrainConfig(**config)


@pytest.mark.slow
def test_from_stage__a_shared_stage_that_differs_is_one_line_naming_stage_and_key(
        earlier, tmp_path, capsys):
    config = {**BASE, "stages": [{**GRID, "learning_rate": 1e-3}, FEEDING]}
    run_dir = tmp_path / "run"
    assert _from_stage(tmp_path, config, stage_end_checkpoint(earlier, 1), run_dir) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "stage 1 ('grid') differs" in error and "learning_rate=0.0005 (this config: 0.001)" in error
    assert not run_dir.exists() or not any(run_dir.iterdir())


@pytest.mark.slow
def test_from_stage__a_renamed_shared_stage_is_refused(earlier, tmp_path, capsys):
    config = {**BASE, "stages": [{**GRID, "name": "warm"}, FEEDING]}
    assert _from_stage(tmp_path, config, stage_end_checkpoint(earlier, 1), tmp_path / "r") == 2
    assert "is named 'warm' in this config and 'grid'" in capsys.readouterr().err


@pytest.mark.slow
def test_from_stage__a_checkpoint_inside_a_stage_is_refused(earlier, tmp_path, capsys):
    inside = sorted((earlier / "snapshots").glob("snapshot_*.zip"))[0]  # step 1024, stage 1
    assert read_metadata(inside)["timesteps"] == 1024
    assert _from_stage(tmp_path, LONGER, inside, tmp_path / "r") == 2
    assert "inside stage 1 (which ends at step 2,048)" in capsys.readouterr().err


@pytest.mark.slow
def test_from_stage__more_stages_than_the_config_has_is_refused(earlier, tmp_path, capsys):
    config = {**BASE, "stages": [GRID]}
    assert _from_stage(tmp_path, config, stage_end_checkpoint(earlier, 2), tmp_path / "r") == 2
    assert "this config has only 1 stages" in capsys.readouterr().err


@pytest.mark.slow
def test_from_stage__a_run_directory_with_files_is_refused(earlier, tmp_path, capsys):
    run_dir = tmp_path / "used"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("mine")
    assert _from_stage(tmp_path, LONGER, stage_end_checkpoint(earlier, 2), run_dir) == 2
    assert "is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in run_dir.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_from_stage__an_earlier_run_missing_a_pool_snapshot_is_refused_before_copying(
        earlier, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(earlier, copy)
    pool = read_metadata(stage_end_checkpoint(copy, 2))["snapshots"]
    (copy / "snapshots" / f"{pool[-1]}.zip").unlink()
    run_dir = tmp_path / "r"
    assert _from_stage(tmp_path, LONGER, stage_end_checkpoint(copy, 2), run_dir) == 2
    assert f"has snapshot {pool[-1]!r} in its opponent pool" in capsys.readouterr().err
    assert not run_dir.exists() or not any(run_dir.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("state", [
    {"eval_lines": "3"}, {"eval_lines": -1}, {"eval_lines": True}, [1, 2], {},
], ids=["text", "negative", "bool", "a_list", "missing"])
def test_from_stage__a_damaged_training_state_is_one_line_before_copying(
        earlier, tmp_path, capsys, state):
    copy = tmp_path / "copy"
    shutil.copytree(earlier, copy)
    kept = stage_end_checkpoint(copy, 1)
    edit_state(kept, lambda saved: state)
    run_dir = tmp_path / "r"
    assert _from_stage(tmp_path, LONGER, kept, run_dir) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "has a damaged training state: 'eval_lines'" in error
    assert not run_dir.exists() or not any(run_dir.iterdir())


@pytest.mark.slow
def test_from_stage__a_checkpoint_with_a_damaged_stage_record_is_one_line(
        earlier, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(earlier, copy)
    kept = stage_end_checkpoint(copy, 1)
    edit_metadata(kept, stage={"number": "1", "start": 0})
    assert _from_stage(tmp_path, LONGER, kept, tmp_path / "r") == 2
    assert "records stage {'number': '1', 'start': 0}, which its run does not have" in \
        capsys.readouterr().err


def test_from_stage__a_missing_checkpoint_is_one_line(tmp_path, capsys):
    assert _from_stage(tmp_path, LONGER, tmp_path / "none.zip", tmp_path / "r") == 2
    assert capsys.readouterr().err.startswith("error: --from-stage: checkpoint ")


def test_from_stage__a_network_without_stages_is_refused(tmp_path, capsys):
    network = ROOT / "models" / "ppo_2p_evfit.zip"
    assert "run_config" not in read_metadata(network)
    assert _from_stage(tmp_path, LONGER, network, tmp_path / "r") == 2
    assert "records no run with stages" in capsys.readouterr().err


@pytest.mark.parametrize("extra, words", [
    (["--resume"], "--resume continues one"),
    (["--init-from", "models/ppo_2p.zip"], "not from --init-from"),
])
def test_from_stage__with_resume_or_init_from_is_a_usage_error(tmp_path, capsys, extra, words):
    with pytest.raises(SystemExit) as exit_info:
        _from_stage(tmp_path, LONGER, tmp_path / "stage_1.zip", tmp_path / "r", *extra)
    assert exit_info.value.code == 2
    assert words in capsys.readouterr().err


def test_from_stage__without_config_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_main(["--run-dir", str(tmp_path / "r"), "--from-stage", "x.zip"])
    assert exit_info.value.code == 2
    assert "--from-stage needs --config" in capsys.readouterr().err

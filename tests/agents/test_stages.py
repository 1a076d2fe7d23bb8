"""Staged runs (``stages:``): one command trains every stage in one run directory (one
eval.jsonl, one TensorBoard log with ``train/stage``, checkpoints that record the stage),
grows the network between stages, and a run killed inside a stage or at a stage boundary
and resumed ends exactly like one never stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from run_logs import evaluations, scalars
from small_runs import WARM_STARTED_RUN

from agents.ppo.checkpoint import load_policy, read_metadata
from agents.training.config import TrainConfig
from agents.training.trainer import train

ROOT = Path(__file__).resolve().parents[2]

# stage 1: 2 rollouts of 16 x 64 steps from a short warm start; stage 2: the network grown
# to the feeding inputs and a wider first layer, another learning rate, opponent mix and
# evaluation opponent, an empty opponent pool, expert iteration at 3072 and 4096,
# checkpoints every rollout
STAGED = dict(
    WARM_STARTED_RUN,
    checkpoint_interval=2048,
    value_warmup_rollouts=1,
    eval_opponents=["greedy"],
    stages=[
        {"name": "grid", "total_timesteps": 2048},
        {"name": "feeding", "total_timesteps": 3072, "features": "grid_feeding",
         "net_arch": [48, 32], "learning_rate": 1e-4, "learning_rate_final": 5e-5,
         "opponent_mix": {"ev": 0.5, "self": 0.5}, "eval_opponents": ["ev"], "fresh_pool": True,
         "checkpoint_interval": 1024, "expert_interval": 1024, "expert_games": 2,
         "expert_search": "search(samples=2,depth=2)"},
    ],
)


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The staged run, never stopped."""
    run_dir = tmp_path_factory.mktemp("staged") / "whole"
    train(TrainConfig(**STAGED), run_dir)
    return run_dir


@pytest.mark.slow
def test_staged_run__trains_every_stage_in_one_run_directory(whole):
    logged = evaluations(whole)
    assert [(e["timesteps"], e["stage"]) for e in logged] == [
        (1024, "grid"), (2048, "grid"), (3072, "feeding"), (4096, "feeding"), (5120, "feeding")]
    assert [list(e["results"]) for e in logged] == [["greedy"]] * 2 + [["ev"]] * 3
    last = read_metadata(whole / "checkpoints" / "last.zip")
    assert last["stage"] == {"number": 2, "name": "feeding", "of": 2, "start": 2048}
    assert last["timesteps"] == 5120
    # the network of stage 2, grown from stage 1's: the checkpoint's config is the stage's
    assert last["policy"] == {"net_arch": [48, 32], "activation": "relu",
                              "features": "grid_feeding"}
    assert last["config"]["learning_rate"] == 1e-4 and last["config"]["stages"] == []
    assert "stage" in read_metadata(whole / "best.zip")
    # the run's config.yaml holds the stages, and loads back to the same config
    assert TrainConfig.from_dict(yaml.safe_load((whole / "config.yaml").read_text())) == \
        TrainConfig(**STAGED)
    by_tag = scalars(whole)
    assert {value for _, value in by_tag["train/stage"]} == {1.0, 2.0}
    assert all(value == (1.0 if step <= 2048 else 2.0) for step, value in by_tag["train/stage"])
    # stage 2's learning rate starts again from its own learning_rate
    stage2_rates = [value for step, value in by_tag["train/learning_rate"] if step > 2048]
    assert max(stage2_rates) <= 1e-4 + 1e-12 and min(stage2_rates) >= 5e-5 - 1e-12
    assert [step for step, _ in by_tag["expert/agreement_after"]] == [4096, 5120]


@pytest.mark.slow
def test_staged_run__fresh_pool_drops_the_earlier_stages_snapshots(whole):
    # snapshot_min_score 0: every new best joins, the first evaluation of a stage included
    at_boundary = read_metadata(whole / "checkpoints" / "stage_1.zip")["snapshots"]
    assert at_boundary and all(int(name.split("_")[1]) <= 2048 for name in at_boundary)
    last = read_metadata(whole / "checkpoints" / "last.zip")["snapshots"]
    assert last, "stage 2's first evaluation adds a snapshot again"
    assert all(int(name.split("_")[1]) > 2048 for name in last), last
    assert "snapshot_000000003072" in last


def _kill_when(process: subprocess.Popen, run_dir: Path, stage_number: int) -> int:
    """SIGKILL ``process`` once its last checkpoint records stage ``stage_number`` and an
    evaluation has been written past it; returns the checkpoint's steps."""
    last, log = run_dir / "checkpoints" / "last.zip", run_dir / "eval.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if last.exists() and log.exists():
            try:
                metadata = read_metadata(last)
            except Exception:  # being replaced right now
                time.sleep(0.02)
                continue
            evaluated = [json.loads(line)["timesteps"] for line in log.read_text().splitlines()
                         if line.endswith("}")]
            if (metadata["stage"]["number"] == stage_number and evaluated
                    and evaluated[-1] > metadata["timesteps"]):
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
                return metadata["timesteps"]
        time.sleep(0.02)
    process.kill()
    raise AssertionError(f"the run ended before it could be killed: {process.stderr.read()}")


@pytest.mark.slow
@pytest.mark.parametrize("stage_number, saved_at", [(1, 2048), (2, 3072)],
                         ids=["at_the_stage_boundary", "inside_the_second_stage"])
def test_staged_run__killed_and_resumed_equals_the_uninterrupted_run(
        whole, tmp_path, stage_number, saved_at):
    config_path = tmp_path / "staged.yaml"
    config_path.write_text(yaml.safe_dump(STAGED))
    killed = tmp_path / "killed"
    command = [sys.executable, str(ROOT / "train.py"), "--run-dir", str(killed),
               "--no-progress"]
    process = subprocess.Popen([*command, "--config", str(config_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               cwd=tmp_path)
    assert _kill_when(process, killed, stage_number) == saved_at
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True,
                             cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr

    assert evaluations(killed) == evaluations(whole)
    final = {name: load_policy(d / "checkpoints" / "last.zip").state_dict()
             for name, d in (("whole", whole), ("killed", killed))}
    for name, tensor in final["whole"].items():
        assert torch.equal(tensor, final["killed"][name]), name
    assert scalars(killed) == scalars(whole)
    assert read_metadata(killed / "best.zip")["score"] == read_metadata(whole / "best.zip")["score"]


@pytest.mark.slow
def test_staged_run__eval_log_reads_as_a_curve_with_its_stage_starts(whole):
    from agents.evaluation.curves import read_eval_log, stage_starts

    logged = read_eval_log(whole)
    assert [e.timesteps for e in logged] == [1024, 2048, 3072, 4096, 5120]
    assert stage_starts(logged) == [(0, "grid"), (2048, "feeding")]
    assert all(low <= rate <= high for e in logged for rate, low, high in e.win_rates.values())

"""``experiments/average_weights.py``: a weight average of checkpoints of one architecture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agents.ppo.checkpoint import load_policy

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "experiments" / "average_weights.py"


def _average(out: Path, *checkpoints: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(out), *map(str, checkpoints)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.slow  # subprocess runs
def test_average_weights__two_networks_give_their_mean_tensor_for_tensor(tmp_path):
    first, second = ROOT / "models" / "ppo_4p_long.zip", ROOT / "models" / "ppo_4p_recipe.zip"
    done = _average(tmp_path / "mean.zip", first, second)
    assert done.returncode == 0, done.stderr
    mean = load_policy(tmp_path / "mean.zip").state_dict()
    one, two = load_policy(first).state_dict(), load_policy(second).state_dict()
    assert mean.keys() == one.keys()
    for key, value in mean.items():
        torch.testing.assert_close(value, (one[key] + two[key]) / 2, rtol=0, atol=1e-6)


@pytest.mark.slow  # subprocess runs
def test_average_weights__networks_of_two_architectures_are_one_line_exit_2(tmp_path):
    done = _average(tmp_path / "mean.zip", ROOT / "models" / "ppo_2p.zip",
                    ROOT / "models" / "ppo_4p_long.zip")
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: the networks differ in their tensors: "
                                   "give one architecture")
    assert not (tmp_path / "mean.zip").exists()

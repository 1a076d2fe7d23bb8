"""The envs' compiled helpers recompile when the engine or encoder code they call changes.

Numba keys its disk cache on a function's own source file only; `skyjo_env.core.jit.jit`
caches into a directory named by the digest of every source of the package. Checked on a
copy of the package in a temporary directory, in fresh processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skyjo_env
from skyjo_env.core.jit import CACHE_DIR_PREFIX, prune_cache_dirs

PROBE = """
import json
from skyjo_env.aec import observe_into, raw_env
game = raw_env(num_players=2)
game.reset(seed=0)
game.observe(game.agent_selection)
stats = observe_into.stats
from skyjo_env.core import jit
print(json.dumps({"hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values()),
                  "cache_dir": str(jit.CACHE_DIR)}))
"""


def run_probe(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # subprocesses compiling the kernels
def test_jit__recompiles_when_a_called_module_changes(tmp_path):
    # the copied caches stay valid: they are keyed on source contents
    shutil.copytree(Path(skyjo_env.__file__).parent, tmp_path / "skyjo_env")
    first = run_probe(tmp_path)  # compiles if the copied cache lacks it
    cache_dir = Path(first.pop("cache_dir"))
    pycache = tmp_path / "skyjo_env" / "__pycache__"
    assert cache_dir.parent == pycache
    assert cache_dir.name.startswith(CACHE_DIR_PREFIX)
    assert any(cache_dir.rglob("aec.observe_into-*.nbi"))  # the cache lives there
    again = run_probe(tmp_path)
    assert again.pop("cache_dir") == str(cache_dir)
    assert again == {"hits": 1, "misses": 0}  # loads from the cache
    encoding = tmp_path / "skyjo_env" / "encoding.py"
    encoding.write_text(encoding.read_text() + "\n# changed\n")
    changed = run_probe(tmp_path)
    assert changed["misses"] == 1  # aec.py is unchanged, yet it recompiles
    assert Path(changed["cache_dir"]) != cache_dir  # into a directory of the new digest
    assert Path(changed["cache_dir"]).parent == pycache


def test_prune_cache_dirs__keeps_the_current_and_the_most_recent_others(tmp_path):
    current = tmp_path / f"{CACHE_DIR_PREFIX}current"
    current.mkdir()
    os.utime(current, (1, 1))  # the oldest of all, yet kept
    others = []
    for age in range(6):
        path = tmp_path / f"{CACHE_DIR_PREFIX}{age}"
        (path / "core_x").mkdir(parents=True)
        os.utime(path, (1000 - age, 1000 - age))  # "0" is the most recent
        others.append(path)
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    deleted = prune_cache_dirs(tmp_path, current, keep=2)
    assert sorted(deleted) == sorted(others[2:])
    left = sorted(path.name for path in tmp_path.iterdir())
    assert left == sorted([current.name, others[0].name, others[1].name, "unrelated"])

"""The envs' compiled helpers recompile when the engine or encoder code they call changes.

Numba keys its disk cache on a function's own source file only; `skyjo_env.core.jit.jit`
adds the digest of every source of the package. Checked on a copy of the package in a temporary
directory, in fresh processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import skyjo_env

PROBE = """
import json
from skyjo_env.aec import observe_into, raw_env
game = raw_env(num_players=2)
game.reset(seed=0)
game.observe(game.agent_selection)
stats = observe_into.stats
print(json.dumps({"hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values())}))
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


def test_jit__recompiles_when_a_called_module_changes(tmp_path):
    # the copied caches stay valid: they are keyed on source contents
    shutil.copytree(Path(skyjo_env.__file__).parent, tmp_path / "skyjo_env")
    run_probe(tmp_path)  # compiles if the copied cache lacks it
    assert run_probe(tmp_path) == {"hits": 1, "misses": 0}  # loads from the cache
    encoding = tmp_path / "skyjo_env" / "encoding.py"
    encoding.write_text(encoding.read_text() + "\n# changed\n")
    assert run_probe(tmp_path)["misses"] == 1  # aec.py is unchanged, yet it recompiles

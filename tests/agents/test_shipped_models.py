"""The agents shipped in models/ load under the current observation layout and play, and
are weights plus JSON only (format skyjo-rl-ppo/2: no pickled member)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from agents.evaluation.tournament import play_tournament
from agents.ppo.checkpoint import (
    CHECKPOINT_FORMAT,
    META_MEMBER,
    OPTIMIZER_MEMBER,
    POLICY_MEMBER,
    read_metadata,
)
from agents.ppo.policy import load_ppo_agent
from agents.registry import make_agent
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import OBSERVATION_VERSION

MODELS = Path(__file__).resolve().parents[2] / "models"


#: every shipped network: its players and its features kind
SHIPPED = {"ppo_2p": (2, "grid"), "ppo_4p": (4, "grid"), "ppo_2p_feeding": (2, "grid_feeding"),
           "ppo_4p_feeding": (4, "grid_feeding_waits"), "ppo_2p_distilled": (2, "grid_feeding"),
           "ppo_4p_stage3": (4, "grid_feeding_waits"), "ppo_4p_stage4": (4, "grid_feeding_waits"),
           "ppo_4p_stage5": (4, "grid_feeding_waits"), "ppo_2p_stage3": (2, "grid_feeding")}


def test_shipped_list__names_every_network_in_models():
    on_disk = {path.stem for path in MODELS.glob("*.zip")}
    assert on_disk == set(SHIPPED), "add new models/*.zip files to SHIPPED (and drop removed ones)"


@pytest.mark.slow  # shipped-model games
@pytest.mark.parametrize("name, players", [(name, players) for name, (players, _) in SHIPPED.items()])
def test_shipped_model__loads_and_plays_legal_full_games(name, players):
    path = MODELS / f"{name}.zip"
    assert read_metadata(path)["observation_version"] == OBSERVATION_VERSION
    rules = SkyjoRules(num_players=players)
    agent = load_ppo_agent(path, rules)
    others = [make_agent("greedy", rules, seed=k) for k in range(players - 1)]
    result = play_tournament([agent, *others], rules, 2 * players, seed=0, progress=False,
                             ratings=False)
    assert result.agents[0].games == 2 * players
    assert (MODELS / f"{name}.config.yaml").is_file()
    assert (MODELS / f"{name}.vs_ev.json").is_file()


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_model__is_weights_and_json_only(name):
    path = MODELS / f"{name}.zip"
    metadata = read_metadata(path)
    assert metadata["format"] == CHECKPOINT_FORMAT
    assert metadata["policy"] == {"net_arch": [256, 256], "activation": "relu",
                                  "features": SHIPPED[name][1]}
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == sorted([META_MEMBER, POLICY_MEMBER, OPTIMIZER_MEMBER])


@pytest.mark.slow  # subprocess run
def test_load_ppo_agent__acting_needs_no_optimizer_and_skips_torch_dynamo():
    # a real torch optimizer imports torch._dynamo (about a second per process); a policy
    # loaded to act gets a stand-in that names the problem if anyone tries to train it
    code = (
        "import sys\n"
        "from agents.registry import make_agent\n"
        "from skyjo_env.core.rules import SkyjoRules\n"
        "agent = make_agent('ppo:models/ppo_2p.zip', SkyjoRules(), 0)\n"
        "print('torch._dynamo' in sys.modules)\n"
        "try:\n"
        "    agent.policy.optimizer.step()\n"
        "except AttributeError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=MODELS.parent, timeout=120)
    assert result.returncode == 0, result.stderr
    imported, message = result.stdout.splitlines()
    assert imported == "False"
    assert "loaded for inference and has no optimizer ('step')" in message

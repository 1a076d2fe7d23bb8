"""The networks shipped in models/: each ``<name>.zip`` comes with its model card
``<name>.md``, the card agrees with the checkpoint's own metadata and names reports that
exist, and every network loads under the current observation layout, plays, and is weights
plus JSON only (format skyjo-rl-ppo/2: no pickled member). The list of networks is read
from the files, so a network added or removed needs no edit here."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from agents.evaluation.tournament import play_tournament
from agents.ppo.checkpoint import (
    CHECKPOINT_FORMAT,
    META_MEMBER,
    OPTIMIZER_MEMBER,
    POLICY_MEMBER,
    UNCHECKED_FORMAT,
    read_metadata,
)
from agents.ppo.policy import load_ppo_agent
from agents.registry import make_agent
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import OBSERVATION_VERSION

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
#: Every shipped network, by name: the ``models/*.zip`` files.
SHIPPED = sorted(path.stem for path in MODELS.glob("*.zip"))
#: The keys a model card's front matter holds.
CARD_KEYS = {"players", "strongest", "features", "trained_with", "parent", "steps", "commit",
             "reports"}


def _card(name: str) -> tuple[dict, str]:
    """A model card's YAML front matter and its Markdown body."""
    text = (MODELS / f"{name}.md").read_text()
    if not text.startswith("---\n"):
        raise ValueError(f"models/{name}.md does not start with YAML front matter (---)")
    front, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(front), body


def test_models__hold_only_networks_and_their_cards():
    networks = {path.stem for path in MODELS.glob("*.zip")}
    cards = {path.stem for path in MODELS.glob("*.md")}
    others = sorted(path.name for path in MODELS.iterdir()
                    if path.suffix not in {".zip", ".md"})
    assert "ppo_2p" in networks and "ppo_4p" in networks  # the tests and benchmarks use them
    assert not networks - cards, f"networks without a model card: {sorted(networks - cards)}"
    assert not cards - networks, f"model cards without a network: {sorted(cards - networks)}"
    assert not others, f"models/ holds only networks and cards; move {others} to results/"


@pytest.mark.parametrize("name", SHIPPED)
def test_model_card__agrees_with_the_checkpoint_and_names_existing_reports(name):
    front, body = _card(name)
    metadata = read_metadata(MODELS / f"{name}.zip")
    assert set(front) == CARD_KEYS, f"models/{name}.md front matter keys: {sorted(front)}"
    assert front["players"] == metadata["rules"]["num_players"]
    assert front["features"] == metadata["policy"]["features"]
    assert front["steps"] == metadata["timesteps"]
    assert (ROOT / front["trained_with"]).is_file(), front["trained_with"]
    assert front["parent"] is None or isinstance(front["parent"], str)
    assert front["reports"], f"models/{name}.md names no report"
    for report in front["reports"]:
        data = json.loads((ROOT / report).read_text())
        assert data["agents"][0]["spec"] == f"ppo:models/{name}.zip", report
        assert data["num_players"] == front["players"], report
        # the card quotes the report's headline number
        assert f"{data['agents'][0]['win_rate']:.1%}" in body, (report, "win rate not quoted")


@pytest.mark.slow  # shipped-model games
@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model__loads_and_plays_legal_full_games(name):
    path = MODELS / f"{name}.zip"
    metadata = read_metadata(path)
    assert metadata["observation_version"] == OBSERVATION_VERSION
    players = metadata["rules"]["num_players"]
    rules = SkyjoRules(num_players=players)
    agent = load_ppo_agent(path, rules)
    others = [make_agent("greedy", rules, seed=k) for k in range(players - 1)]
    result = play_tournament([agent, *others], rules, 2 * players, seed=0, progress=False,
                             ratings=False)
    assert result.agents[0].games == 2 * players


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model__is_weights_and_json_only(name):
    path = MODELS / f"{name}.zip"
    metadata = read_metadata(path)
    # shipped before checksums: they load unchecked (a format of its own says so)
    assert metadata["format"] in (CHECKPOINT_FORMAT, UNCHECKED_FORMAT)
    assert set(metadata["policy"]) == {"net_arch", "activation", "features"}
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
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    imported, message = result.stdout.splitlines()
    assert imported == "False"
    assert "loaded for inference and has no optimizer ('step')" in message


def test_model_cards__one_strongest_per_table_size_and_it_wins_most_against_ev():
    # `ppo:best` (agents.registry.best_network) loads the card marked strongest
    by_size: dict[int, list[tuple[float, str, bool]]] = {}
    for name in SHIPPED:
        front, _ = _card(name)
        assert isinstance(front["strongest"], bool), name
        report = next(r for r in front["reports"] if r.endswith("vs_ev.json"))
        win_rate = json.loads((ROOT / report).read_text())["agents"][0]["win_rate"]
        by_size.setdefault(front["players"], []).append((win_rate, name, front["strongest"]))
    for players, cards in by_size.items():
        assert sum(strongest for _, _, strongest in cards) == 1, (players, cards)
        assert max(cards)[2], f"the strongest {players}-player card is not the best against ev"

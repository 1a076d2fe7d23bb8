"""Paired comparisons (`agents.evaluation.compare`): two runs or networks on the same deals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from games_csv_files import games_csv

from agents.evaluation.compare import (
    PairingError,
    common_rules,
    deal_shares,
    interval_text,
    network_deal_shares,
    paired_runs,
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def test_paired_runs__known_answer_over_the_whole_deal_groups_in_common(tmp_path):
    first = games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0), (1, 0, 1), (1, 1, 1),
                                              (2, 0, 0), (2, 1, 0)])
    # deal 2 played in one rotation only: not a whole group, left out
    second = games_csv(tmp_path / "b.csv", 7, [(0, 0, 1), (0, 1, 1), (1, 0, 0.5), (1, 1, 1),
                                               (2, 0, 1)])
    a, b, seed = paired_runs(first, second, agent=0)
    assert seed == 7
    np.testing.assert_allclose(a, [0.5, 1.0])
    np.testing.assert_allclose(b, [1.0, 0.75])
    a1, b1, _ = paired_runs(first, second, agent=1)
    np.testing.assert_allclose(a1, 1 - a)
    np.testing.assert_allclose(b1, 1 - b)


def test_deal_shares__whole_groups_are_the_largest_ones_of_a_file():
    # two agents seated in all orders give 2 games a deal too; the size comes from the
    # file, so a 3-game group (another seating's) counts as whole and a 2-game one not
    rows = [(0, 0, 1), (0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 1, 1)]
    columns = {"deal": np.array([r[0] for r in rows], float),
               "agent_0_win_share": np.array([r[2] for r in rows], float)}
    assert deal_shares(columns, 0) == {0: pytest.approx(2 / 3)}


@pytest.mark.parametrize(
    "second, agent, message",
    [
        ("other_seed", 0, "the runs used other seeds ([7] and [8])"),
        ("json", 0, "not a --games-csv file of evaluate.py"),
        ("missing", 0, "not a readable --games-csv file"),
        ("same", 2, "--agent must be in [0, 1], got 2"),
        ("disjoint", 0, "no whole deal group in common"),
    ],
)
def test_paired_runs__runs_that_cannot_be_paired_are_named(tmp_path, second, agent, message):
    first = games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0)])
    paths = {
        "other_seed": games_csv(tmp_path / "b.csv", 8, [(0, 0, 1), (0, 1, 0)]),
        "json": tmp_path / "report.json",
        "missing": tmp_path / "missing.csv",
        "same": first,
        "disjoint": games_csv(tmp_path / "c.csv", 7, [(1, 0, 1), (1, 1, 0)]),
    }
    (tmp_path / "report.json").write_text('{"games": 2}\n')
    with pytest.raises(PairingError) as error:
        paired_runs(first, paths[second], agent=agent)
    assert message in str(error.value)


def test_interval_text__win_rates_stay_within_0_and_100():
    # the plain Student-t interval of these five deal shares reaches 117.8%
    assert interval_text(np.array([1.0, 1.0, 0.5, 1.0, 1.0])) == "90.0% [62.2, 100.0]"
    assert interval_text(np.array([0.1, -0.2, 0.3]), signed=True) == "+6.7 [-55.8, +69.2]"


def test_common_rules__networks_of_other_rules_are_named():
    assert common_rules([MODELS / "ppo_2p.zip", MODELS / "ppo_2p_stage3.zip"]).num_players == 2
    with pytest.raises(ValueError, match="ppo_4p.zip was trained for other rules than"):
        common_rules([MODELS / "ppo_2p.zip", MODELS / "ppo_4p.zip"])


@pytest.mark.slow  # shipped-model games
def test_network_deal_shares__same_network_same_deals_same_shares():
    first = network_deal_shares(MODELS / "ppo_2p.zip", 8, seed=3)
    again = network_deal_shares(MODELS / "ppo_2p.zip", 8, seed=3)
    assert first.shape == (4,) and ((first >= 0) & (first <= 1)).all()
    np.testing.assert_array_equal(first, again)

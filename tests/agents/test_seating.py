"""Seatings of a deal group: the cyclic rotations and all orders (``seating="all"``)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from agents.cli.evaluate import main
from agents.evaluation.games import (
    GameRecords,
    check_games,
    games_per_deal,
    max_games,
    seat_arrangements,
)
from agents.evaluation.report import format_table, render_json
from agents.evaluation.tournament import evaluate_agents
from skyjo_env.core.rules import SkyjoRules


def test_seat_arrangements__cyclic_rotations_and_all_orders():
    cyclic = seat_arrangements(3)
    assert cyclic.tolist() == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    orders = seat_arrangements(4, "all")
    assert orders.shape == (24, 4) and orders.dtype == np.int64
    assert [tuple(row) for row in orders] == list(itertools.permutations(range(4)))
    # every agent sits every seat equally often in both
    for table in (cyclic, orders):
        players = table.shape[1]
        for agent in range(players):
            assert np.bincount(table[:, agent], minlength=players).tolist() == [
                len(table) // players] * players
    assert games_per_deal(4) == 4 and games_per_deal(4, "all") == 24


def _predecessor_counts(records: GameRecords) -> np.ndarray:
    """(P, P): games in which agent b sat right after agent a (b draws a's discards)."""
    players = records.seat.shape[1]
    counts = np.zeros((players, players), np.int64)
    for seats in records.seat:
        for a, b in itertools.permutations(range(players), 2):
            counts[a, b] += seats[b] == (seats[a] + 1) % players
    return counts


def test_all_orders__every_agent_follows_every_other_equally_often():
    result = evaluate_agents(["ev", "greedy", "random"], SkyjoRules(), 50, 0,
                             progress=False, seating="all")
    assert result.games == 54 and result.deals == 9 and result.seating == "all"
    records = result.records
    assert records.games_per_deal == 6
    assert np.array_equal(records.deal, np.repeat(np.arange(9), 6))
    off_diagonal = _predecessor_counts(records)[~np.eye(3, dtype=bool)]
    assert (off_diagonal == 27).all()  # 3 of the 6 orders per deal, for every ordered pair
    cyclic = evaluate_agents(["ev", "greedy", "random"], SkyjoRules(), 54, 0, progress=False)
    counts = _predecessor_counts(cyclic.records)
    assert counts[0, 1] == 54 and counts[1, 0] == 0  # the bias the full seating removes


def test_all_orders__deal_group_d_deals_the_cyclic_tournament_s_deal_d():
    # deterministic agents: the identity order of deal d replays rotation 0 of deal d
    specs = ["ev", "greedy", "ev"]
    cyclic = evaluate_agents(specs, SkyjoRules(), 12, 4, progress=False, ratings=False)
    orders = evaluate_agents(specs, SkyjoRules(), 24, 4, progress=False, ratings=False,
                             seating="all")
    identity_games = np.flatnonzero(orders.records.rotation == 0)
    assert np.array_equal(orders.records.total[identity_games], cyclic.records.total[::3])


def test_all_orders__report_counts_deals_by_their_games():
    result = evaluate_agents(["ev", "greedy", "random"], SkyjoRules(), 12, 0, progress=False,
                             seating="all")
    assert format_table(result).splitlines()[0].startswith(
        "12 games: 2 deals x 6 seat orders (all), seed 0")
    report = json.loads(render_json(result))
    assert report["seating"] == "all" and report["deals"] == 2
    assert "all seat orders" in report["win_rate_ci_method"]
    two = evaluate_agents(["ev", "greedy"], SkyjoRules(), 10, 0, progress=False)
    assert json.loads(render_json(two))["seating"] == "cyclic"
    assert format_table(two).splitlines()[0].startswith("10 games: 5 deals x 2 seat rotations")


def test_report__a_count_rounded_up_to_whole_deal_groups_says_what_was_asked():
    rounded = evaluate_agents(["ev", "greedy", "random"], SkyjoRules(), 7, 0, progress=False,
                              ratings=False)
    assert format_table(rounded).splitlines()[0].startswith(
        "9 games (asked 7, rounded up to whole deal groups): 3 deals x 3 seat rotations")
    exact = evaluate_agents(["ev", "greedy", "random"], SkyjoRules(), 9, 0, progress=False,
                            ratings=False)
    assert "asked" not in format_table(exact).splitlines()[0]


def test_seating__bad_values_and_too_many_orders_are_refused():
    with pytest.raises(ValueError, match="seating must be one of 'cyclic', 'all', got 'random'"):
        seat_arrangements(3, "random")
    with pytest.raises(ValueError, match=r"plays 7! games per deal: at most 6 agents"):
        games_per_deal(7, "all")
    assert max_games(3, "all") % 6 == 0
    assert check_games(max_games(3, "all"), 3, "all") == max_games(3, "all")


def test_main__seating_all_over_six_agents_is_a_one_line_error(capsys):
    assert main(["--agents", *["random"] * 7, "--seating", "all", "--games", "10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "evaluate: error: --seating: seating='all' plays 7! games per deal" in err


def test_main__seating_all_games_csv_names_each_order(tmp_path, capsys):
    path = tmp_path / "games.csv"
    assert main(["--agents", "ev", "greedy", "random", "--seating", "all", "--games", "6",
                 "--no-progress", "--games-csv", str(path)]) == 0
    assert "1 deals x 6 seat orders (all)" in capsys.readouterr().out
    rows = path.read_text().splitlines()[1:]
    assert [row.split(",")[3] for row in rows] == ["0", "1", "2", "3", "4", "5"]

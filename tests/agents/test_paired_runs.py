"""benchmarks/paired_runs.py: pairing two evaluate.py runs on the deals they share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "paired_runs.py"
HEADER = ("seed,game,deal,rotation,rounds,truncated,agent_0_total,agent_0_win_share,"
          "agent_1_total,agent_1_win_share")


def _games_csv(path: Path, seed: int, rows: list[tuple[int, int, float]]) -> Path:
    """A --games-csv file of two agents: rows of (deal, rotation, agent 0's win share)."""
    lines = [HEADER] + [
        f"{seed},{g},{deal},{rotation},3,0,{50 if share else 90},{share},"
        f"{90 if share else 50},{1 - share}"
        for g, (deal, rotation, share) in enumerate(rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_paired__known_answer_over_the_whole_deal_groups_in_common(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from paired_runs import paired

    first = _games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0), (1, 0, 1), (1, 1, 1),
                                               (2, 0, 0), (2, 1, 0)])
    # deal 2 played in one rotation only: not a whole group, left out
    second = _games_csv(tmp_path / "b.csv", 7, [(0, 0, 1), (0, 1, 1), (1, 0, 0.5), (1, 1, 1),
                                                (2, 0, 1)])
    a, b, seed = paired(first, second, agent=0)
    assert seed == 7
    np.testing.assert_allclose(a, [0.5, 1.0])
    np.testing.assert_allclose(b, [1.0, 0.75])
    a1, b1, _ = paired(first, second, agent=1)
    np.testing.assert_allclose(a1, 1 - a)
    np.testing.assert_allclose(b1, 1 - b)
    done = _run(str(first), str(second))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "agent 0, 2 deal groups in common, seed 7"
    assert done.stdout.splitlines()[-1].split()[-3] == "+12.5"  # mean of +50 and -25 points


def test_paired__whole_groups_are_the_largest_ones_of_a_file(tmp_path, monkeypatch):
    # two agents seated in all orders give 2 games a deal too; the size comes from the
    # file, so a 3-game group (another seating's) counts as whole and a 2-game one not
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from paired_runs import deal_shares

    rows = [(0, 0, 1), (0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 1, 1)]
    columns = {"deal": np.array([r[0] for r in rows], float),
               "agent_0_win_share": np.array([r[2] for r in rows], float)}
    assert deal_shares(columns, 0) == {0: pytest.approx(2 / 3)}


def test_main__the_same_evaluate_run_twice_differs_by_zero(tmp_path):
    games = tmp_path / "games.csv"
    evaluate = [sys.executable, str(ROOT / "evaluate.py"), "--agents", "ev", "greedy", "--games",
                "8", "--seed", "3", "--no-progress", "--no-ratings", "--games-csv", str(games)]
    assert subprocess.run(evaluate, capture_output=True, cwd=ROOT, timeout=300).returncode == 0
    done = _run(str(games), str(games), "--agent", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "agent 1, 4 deal groups in common, seed 3"
    assert done.stdout.rstrip().endswith("+0.0 [+0.0, +0.0]")


@pytest.mark.parametrize(
    "second, extra, message",
    [
        ("other_seed", [], "the runs used other seeds ([7] and [8])"),
        ("json", [], "not a --games-csv file of evaluate.py"),
        ("missing", [], "not a readable --games-csv file"),
        ("same", ["--agent", "2"], "--agent must be in [0, 1], got 2"),
        ("disjoint", [], "no whole deal group in common"),
    ],
)
def test_main__runs_that_cannot_be_paired_are_one_line_exit_2(tmp_path, second, extra, message):
    first = _games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0)])
    paths = {
        "other_seed": _games_csv(tmp_path / "b.csv", 8, [(0, 0, 1), (0, 1, 0)]),
        "json": tmp_path / "report.json",
        "missing": tmp_path / "missing.csv",
        "same": first,
        "disjoint": _games_csv(tmp_path / "c.csv", 7, [(1, 0, 1), (1, 1, 0)]),
    }
    (tmp_path / "report.json").write_text('{"games": 2}\n')
    done = _run(str(first), str(paths[second]), *extra)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr

"""The evaluation command: reports on success, one-line errors and no files on failure."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.cli.evaluate import main

ROOT = Path(__file__).resolve().parents[2]

AGENT_KEYS = {
    "name",
    "spec",
    "games",
    "wins",
    "win_rate",
    "win_rate_ci",
    "mean_total",
    "mean_total_ci",
    "mean_round_score",
    "mean_rounds_per_game",
    "finish_rate",
    "penalty_rate",
    "penalties_per_game",
    "eliminations_per_game",
    "mean_rank",
    "seat_win_rates",
    "truncated_games",
    "rating",
}


def _outputs(tmp_path: Path) -> list[str]:
    return [
        "--json", str(tmp_path / "report.json"),
        "--csv", str(tmp_path / "report.csv"),
        "--plot", str(tmp_path / "winrates.png"),
    ]  # fmt: skip


def test_main__writes_json_csv_and_png(tmp_path, capsys):
    argv = ["--agents", "greedy", "random", "--games", "40", "--seed", "3", "--no-progress"]
    assert main(argv + _outputs(tmp_path)) == 0
    table = capsys.readouterr().out
    assert "greedy" in table and "random" in table and "95% CI" in table

    report = json.loads((tmp_path / "report.json").read_text())
    assert report["games"] == 40 and report["seed"] == 3
    assert report["rules"]["num_players"] == 2 and report["rules"]["target_score"] == 100
    assert [agent["spec"] for agent in report["agents"]] == ["greedy", "random"]
    for agent in report["agents"]:
        assert AGENT_KEYS <= set(agent)
        low, high = agent["win_rate_ci"]
        assert 0 <= low <= agent["win_rate"] <= high <= 1
        assert set(agent["rating"]) >= {"mu", "sigma", "ordinal"}
    assert sum(agent["wins"] for agent in report["agents"]) == pytest.approx(40)

    with open(tmp_path / "report.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [row["name"] for row in rows] == ["greedy", "random"]
    assert float(rows[0]["win_rate"]) == pytest.approx(report["agents"][0]["win_rate"])
    assert {"win_rate_ci_low", "win_rate_ci_high", "seat_0_win_rate", "rating_mu"} <= set(rows[0])

    png = (tmp_path / "winrates.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "report.csv",
        "report.json",
        "winrates.png",
    ]  # no temporary files left behind


def test_main__games_csv_has_every_game_and_agrees_with_the_report(tmp_path):
    report_path, games_path = tmp_path / "report.json", tmp_path / "games.csv"
    argv = ["--agents", "greedy", "random", "ev", "--games", "12", "--seed", "5",
            "--no-progress", "--no-ratings", "--json", str(report_path),
            "--games-csv", str(games_path)]
    assert main(argv) == 0
    with open(games_path, newline="") as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == ["seed", "game", "deal", "rotation", "rounds", "truncated",
                             "agent_0_total", "agent_0_win_share", "agent_1_total",
                             "agent_1_win_share", "agent_2_total", "agent_2_win_share"]
    assert [int(row["game"]) for row in rows] == list(range(12))
    assert [(int(row["deal"]), int(row["rotation"])) for row in rows] == [
        (g // 3, g % 3) for g in range(12)]
    assert {row["seed"] for row in rows} == {"5"}
    report = json.loads(report_path.read_text())
    for i, agent in enumerate(report["agents"]):
        wins = sum(float(row[f"agent_{i}_win_share"]) for row in rows)
        assert wins == pytest.approx(agent["wins"])
        totals = [int(row[f"agent_{i}_total"]) for row in rows]
        assert sum(totals) / 12 == pytest.approx(agent["mean_total"])
    for row in rows:  # the win goes to the lowest total
        totals = [int(row[f"agent_{i}_total"]) for i in range(3)]
        shares = [float(row[f"agent_{i}_win_share"]) for i in range(3)]
        assert shares[totals.index(min(totals))] > 0 and sum(shares) == pytest.approx(1)


def test_main__same_seed_same_json(tmp_path):
    argv = ["--agents", "random", "random", "random", "--games", "30", "--no-progress"]
    for name in ("a.json", "b.json"):
        assert main(argv + ["--seed", "11", "--json", str(tmp_path / name)]) == 0
    first, second = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    for report in (first, second):
        report.pop("elapsed_s"), report.pop("games_per_second")
    assert first == second
    assert first["games"] == 30 and first["rules"]["num_players"] == 3


def test_main__duplicated_specs_are_separate_entries(tmp_path):
    path = tmp_path / "r.json"
    argv = ["--agents", "greedy", "random", "greedy", "random", "--games", "10"]
    assert main(argv + ["--json", str(path), "--no-progress", "--no-ratings"]) == 0
    report = json.loads(path.read_text())
    assert report["games"] == 12  # rounded up to whole deal groups of 4
    names = [agent["name"] for agent in report["agents"]]
    assert names == ["greedy#1", "random#1", "greedy#2", "random#2"]
    assert report["agents"][0]["rating"]["mu"] is None


def test_main__rules_file_and_online_preset(tmp_path):
    rules_file = tmp_path / "short.yaml"
    rules_file.write_text("target_score: 30\nnum_players: 5\n")
    path = tmp_path / "r.json"
    argv = ["--agents", "random", "random", "--games", "6", "--no-progress"]
    assert main(argv + ["--rules", str(rules_file), "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert report["rules"]["target_score"] == 30 and report["rules"]["num_players"] == 2
    assert main(argv + ["--rules", "online"]) == 0


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--agents", "random", "wizard"], "unknown agent spec 'wizard'"),
        (["--agents", "random", "no_such_pkg.mod:Agent"], "cannot import module"),
        (["--agents", "random", "agents.registry:NoSuchClass"], "no attribute 'NoSuchClass'"),
        (["--agents", "random", "agents.evaluation.games:GameRecords"], "constructing GameRecords"),
        (["--agents", "random", "argparse:Namespace"], "Namespace has no act() method"),
        (["--agents", "random", "ppo:/no/such/checkpoint.zip"], "does not exist"),
        (["--agents", "random", "random", "--rules", "no-such-preset"], "unknown rules preset"),
        (["--agents", "random", "random", "--rules", "missing.yaml"], "does not exist"),
        (["--agents", "random"], "at least 2 agent specs, got 1"),
        (["--agents"] + ["random"] * 13, "13 * 3 * 4 + 2 = 158 cards"),
        (["--agents", "random", "random", "--games", "0"], "--games must be >= 1"),
        (["--agents", "random", "random", "--seed", "-4"], "--seed must be >= 0"),
        (["--agents", "random", "random", "--seed", "-1"], "--seed must be >= 0, got -1"),
        (["--agents", "random", "random", "--torch-threads", "0"],
         "--torch-threads must be >= 1, got 0"),
        (["--agents", "random", "random", "--games", "-3"], "--games must be >= 1, got -3"),
        (
            ["--agents", "random", "random", "--games", str(10**12)],
            f"--games {10**12} is too many for 2 agents: at most",
        ),
        (["--agents", "random", "random", "--workers", "0"], "--workers must be >= 1, got 0"),
        (
            ["--agents", "random", "random", "--workers", "2", "--chunk-deals", "0"],
            "--chunk-deals must be >= 1, got 0",
        ),
        (
            ["--agents", "random", "random", "--chunk-deals", "8"],
            "--chunk-deals applies only with --workers or --ray-address",
        ),
        (
            ["--agents", "random", "random", "--ray-address", "127.0.0.1:1"],
            "cannot reach a Ray cluster at '127.0.0.1:1'",
        ),
        (["--agents", "random", "random", "--ray-address", "head"], "is not HOST:PORT"),
    ],
)
def test_main__bad_input_fails_in_one_line_and_writes_nothing(tmp_path, capsys, argv, words):
    status = main(argv + _outputs(tmp_path) + ["--no-progress"])
    captured = capsys.readouterr()
    assert status == 2
    assert words in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_main__corrupt_rules_file(tmp_path, capsys):
    rules_file = tmp_path / "bad.yaml"
    rules_file.write_text("target_score: [unclosed\n")
    outputs = tmp_path / "out"
    outputs.mkdir()
    status = main(
        ["--agents", "random", "random", "--rules", str(rules_file)] + _outputs(outputs)
    )
    assert status == 2 and "not valid YAML" in capsys.readouterr().err
    assert list(outputs.iterdir()) == []


def test_main__corrupt_checkpoint(tmp_path, capsys, monkeypatch):
    import types

    checkpoint = tmp_path / "model.zip"
    checkpoint.write_bytes(b"\x00garbage")
    fake = types.ModuleType("agents.ppo")

    def load_ppo_agent(path, rules, seed):
        raise ValueError("bad zip header")

    fake.load_ppo_agent = load_ppo_agent
    monkeypatch.setitem(sys.modules, "agents.ppo", fake)
    outputs = tmp_path / "out"
    outputs.mkdir()
    status = main(["--agents", "random", f"ppo:{checkpoint}"] + _outputs(outputs))
    assert status == 2 and "bad zip header" in capsys.readouterr().err
    assert list(outputs.iterdir()) == []


def test_main__ppo_without_training_module(tmp_path, capsys, monkeypatch):
    checkpoint = tmp_path / "model.zip"
    checkpoint.write_bytes(b"weights")
    monkeypatch.setitem(sys.modules, "agents.ppo", None)
    status = main(["--agents", "random", f"ppo:{checkpoint}", "--games", "2"])
    assert status == 2 and "need the training module agents.ppo" in capsys.readouterr().err


def test_main__missing_output_directory(tmp_path, capsys):
    status = main(["--agents", "random", "random", "--json", str(tmp_path / "no" / "r.json")])
    assert status == 2 and "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_main__argparse_errors_return_2(capsys):
    assert main([]) == 2
    assert main(["--agents", "random", "random", "--games", "many"]) == 2
    assert main(["--help"]) == 0
    assert "--agents" in capsys.readouterr().out


@pytest.mark.slow  # subprocess CLI run
def test_evaluate_script__runs_as_a_program(tmp_path):
    path = tmp_path / "r.json"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), "--agents", "random", "greedy",
         "--games", "4", "--no-progress", "--json", str(path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert json.loads(path.read_text())["games"] == 4
    failed = subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), "--agents", "random", "nobody"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert failed.returncode == 2 and "unknown agent spec 'nobody'" in failed.stderr


@pytest.mark.slow  # subprocess CLI run
def test_evaluate__a_closed_stdout_pipe_still_writes_the_report_and_exits_141_quietly(
    tmp_path, run_into_closed_pipe
):
    path = tmp_path / "r.json"
    completed = run_into_closed_pipe(
        "agents.cli.evaluate",
        ["--agents", "random", "greedy", "--games", "4", "--no-progress", "--json", str(path)],
        tmp_path,
    )
    assert completed.returncode == 141
    assert completed.stderr == ""
    assert json.loads(path.read_text())["games"] == 4


def test_evaluate__a_broken_pipe_other_than_standard_output_is_raised(monkeypatch):
    def lost_worker_socket(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("agents.cli.evaluate._run", lost_worker_socket)
    with pytest.raises(BrokenPipeError):
        main(["--agents", "random", "greedy", "--games", "2", "--no-progress"])


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a SIGTERM handler installed (its /proc SigCgt mask)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


@pytest.mark.slow  # subprocess CLI run
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_evaluate__sigterm_stops_it_like_ctrl_c_in_one_line_exit_130(tmp_path):
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "evaluate.py"), "--agents", "ev", "ev", "--games",
         "1000000", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not _catches_sigterm(process.pid):  # the handler is set once the games start
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert (process.returncode, err) == (130, "evaluate: error: interrupted\n")


FAKE_AGENTS = """
import numpy as np


class Fragile:
    name = "fragile"

    def __init__(self, rules, seed):
        pass

    def act(self, observations, action_masks):
        raise RuntimeError("kaboom\\nsecond line")


class OneArg:
    name = "one-arg"

    def act(self, observations):
        return np.zeros(len(observations), np.int64)
"""


@pytest.fixture
def fake_agents(tmp_path, monkeypatch):
    """An importable module ``skyjo_cli_fake_agents`` (outside the output directory)."""
    folder = tmp_path / "modules"
    folder.mkdir()
    (folder / "skyjo_cli_fake_agents.py").write_text(FAKE_AGENTS)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "skyjo_cli_fake_agents", raising=False)
    yield "skyjo_cli_fake_agents"
    sys.modules.pop("skyjo_cli_fake_agents", None)


def _out_dir(tmp_path: Path) -> Path:
    outputs = tmp_path / "out"
    outputs.mkdir()
    return outputs


def test_main__agent_whose_act_raises_is_named_in_one_line(tmp_path, capsys, fake_agents):
    outputs = _out_dir(tmp_path)
    spec = f"{fake_agents}:Fragile"
    status = main(["--agents", "random", spec, "--games", "2", "--no-progress"]
                  + _outputs(outputs))
    err = capsys.readouterr().err
    assert status == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"agent 'fragile' (spec '{spec}') failed in act(): RuntimeError: kaboom" in err
    assert list(outputs.iterdir()) == []


def test_main__agent_with_wrong_act_signature_is_a_usage_error(tmp_path, capsys, fake_agents):
    status = main(["--agents", "random", f"{fake_agents}:OneArg", "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "OneArg.act(observations) cannot be called as act(observations, action_masks)" in err


def test_main__rules_rejected_by_validation_is_one_line(tmp_path, capsys):
    rules_file = tmp_path / "bad.yaml"
    rules_file.write_text("target_score: 0\n")
    status = main(["--agents", "random", "random", "--rules", str(rules_file)])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "target_score" in err and "Traceback" not in err


def test_main__ctrl_c_exits_130_without_traceback(capsys, monkeypatch):
    import agents.cli.evaluate as evaluate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate, "play_tournament", interrupted)
    assert main(["--agents", "random", "random", "--no-progress"]) == 130
    assert capsys.readouterr().err == "evaluate: error: interrupted\n"


def test_main__ctrl_c_with_resume_says_the_same_command_goes_on(tmp_path, capsys,
                                                                monkeypatch):
    import agents.cli.evaluate as evaluate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate, "evaluate_agents_distributed", interrupted)
    chunks = tmp_path / "chunks"
    assert main(["--agents", "ev", "ev", "--workers", "1", "--resume", str(chunks),
                 "--no-progress"]) == 130
    assert capsys.readouterr().err == (
        f"evaluate: error: interrupted; the chunks finished so far stay in {chunks}: the "
        "same command plays the rest\n")


def test_main__truncated_games_reported_as_no_win(tmp_path, capsys):
    rules_file = tmp_path / "capped.yaml"
    rules_file.write_text("max_turns_per_round: 5\n")
    path = tmp_path / "r.json"
    argv = ["--agents", "random", "random", "--games", "4", "--no-progress", "--no-ratings"]
    assert main(argv + ["--rules", str(rules_file), "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning: 4 game(s) truncated by the turn cap" in out
    report = json.loads(path.read_text())
    assert report["truncated_games"] == 4
    assert "no winner" in report["truncated_games_policy"]
    assert [agent["wins"] for agent in report["agents"]] == [0, 0]


def test_main__workers_without_ray_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    outputs = _out_dir(tmp_path)
    status = main(["--agents", "random", "greedy", "--workers", "2", "--no-progress"]
                  + _outputs(outputs))
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert 'distributed evaluation needs Ray' in err and 'pip install -e ".[distributed]"' in err
    assert list(outputs.iterdir()) == []


@pytest.mark.slow  # subprocess CLI run
def test_main__single_process_path_never_imports_ray(tmp_path):
    code = (
        "import sys, agents.evaluation.distributed\n"
        "from agents.cli.evaluate import main\n"
        "status = main(['--agents', 'random', 'greedy', '--games', '4', '--no-progress'])\n"
        "print('status', status, 'ray imported', 'ray' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    assert "status 0 ray imported False" in completed.stdout

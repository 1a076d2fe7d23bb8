"""``skyjo-compare`` (`agents.cli.compare`): paired runs and networks, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from games_csv_files import games_csv

from agents.cli.compare import main
from agents.cli.evaluate import main as evaluate_main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def test_compare_runs__prints_both_win_rates_and_the_paired_difference(tmp_path, capsys):
    first = games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0), (1, 0, 1), (1, 1, 1)])
    second = games_csv(tmp_path / "b.csv", 7, [(0, 0, 1), (0, 1, 1), (1, 0, 0.5), (1, 1, 1)])
    assert main(["runs", str(first), str(second)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "agent 0, 2 deal groups in common, seed 7"
    assert lines[2].startswith(str(first)) and lines[2].split()[1] == "75.0%"
    assert lines[-1].split()[-3] == "+12.5"  # mean of +50 and -25 points


@pytest.mark.slow  # subprocess CLI run
def test_compare_runs__a_closed_stdout_pipe_exits_141_without_a_traceback(
    tmp_path, run_into_closed_pipe
):
    first = games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0)])
    second = games_csv(tmp_path / "b.csv", 7, [(0, 0, 1), (0, 1, 1)])
    completed = run_into_closed_pipe("agents.cli.compare", ["runs", str(first), str(second)],
                                     tmp_path)
    assert completed.returncode == 141
    assert completed.stderr == ""


def test_compare__a_broken_pipe_other_than_standard_output_is_raised(tmp_path, monkeypatch):
    def lost_worker_socket(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("agents.cli.compare.compare_runs", lost_worker_socket)
    first = games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0)])
    with pytest.raises(BrokenPipeError):
        main(["runs", str(first), str(first)])


def test_compare_runs__a_long_name_widens_the_first_column_to_keep_the_columns_aligned(
    tmp_path, capsys
):
    long_dir = tmp_path / ("a_directory_name_much_longer_than_forty_characters_" * 2)
    long_dir.mkdir()
    first = games_csv(long_dir / "a.csv", 7, [(0, 0, 1), (0, 1, 0)])
    second = games_csv(tmp_path / "b.csv", 7, [(0, 0, 1), (0, 1, 1)])
    assert main(["runs", str(first), str(second)]) == 0
    header, first_row, second_row = capsys.readouterr().out.splitlines()[1:4]
    column = header.index("win rate")
    assert column == len(str(first)) + 1
    assert first_row[column:].startswith("50.0%") and second_row[column:].startswith("100.0%")


def test_compare_runs__the_same_evaluate_run_twice_differs_by_zero(tmp_path, capsys):
    games = tmp_path / "games.csv"
    assert evaluate_main(["--agents", "ev", "greedy", "--games", "8", "--seed", "3",
                          "--no-progress", "--no-ratings", "--games-csv", str(games)]) == 0
    capsys.readouterr()
    assert main(["runs", str(games), str(games), "--agent", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "agent 1, 4 deal groups in common, seed 3"
    assert out.rstrip().endswith("+0.0 [+0.0, +0.0]")


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
def test_compare_runs__runs_that_cannot_be_paired_are_one_line_exit_2(
    tmp_path, capsys, second, extra, message
):
    first = games_csv(tmp_path / "a.csv", 7, [(0, 0, 1), (0, 1, 0)])
    paths = {
        "other_seed": games_csv(tmp_path / "b.csv", 8, [(0, 0, 1), (0, 1, 0)]),
        "json": tmp_path / "report.json",
        "missing": tmp_path / "missing.csv",
        "same": first,
        "disjoint": games_csv(tmp_path / "c.csv", 7, [(1, 0, 1), (1, 1, 0)]),
    }
    (tmp_path / "report.json").write_text('{"games": 2}\n')
    assert main(["runs", str(first), str(paths[second]), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("skyjo-compare: error: ")
    assert message in err and err.count("\n") == 1, err


def _resume_dir(path: Path, specs: list[str], chunks: list[int]) -> Path:
    """An evaluate --resume directory of 40 games at seed 3 (5 chunks of 4 deal groups)
    with only ``chunks`` finished, as a stopped run leaves it."""
    from agents.baselines.heuristics import EVAgent, GreedyAgent
    from agents.evaluation.games import play_deals
    from agents.evaluation.resume import ChunkStore, tournament_identity
    from skyjo_env.core.rules import SkyjoRules

    rules = SkyjoRules()
    store = ChunkStore(path, tournament_identity(specs, rules, 40, 3, 4))
    kinds = {"ev": EVAgent, "greedy": GreedyAgent}
    for chunk in chunks:
        deals = range(4 * chunk, 4 * chunk + 4)
        agents = [kinds[spec](rules, i) for i, spec in enumerate(specs)]
        records, _ = play_deals(agents, rules, 3, deals)
        store.save(chunk, records, specs, 1.0)
    return path


def test_compare_runs__two_unfinished_resume_directories_pair_on_their_common_chunks(
    tmp_path, capsys
):
    first = _resume_dir(tmp_path / "a", ["ev", "greedy"], [0, 1, 2])
    second = _resume_dir(tmp_path / "b", ["greedy", "greedy"], [1, 2, 4])
    assert main(["runs", str(first), str(second)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "agent 0, 8 deal groups in common, seed 3"  # chunks 1 and 2


def test_compare_runs__three_runs_pair_on_the_chunks_all_finished_each_against_the_first(
    tmp_path, capsys
):
    first = _resume_dir(tmp_path / "a", ["ev", "greedy"], [0, 1, 2])
    second = _resume_dir(tmp_path / "b", ["greedy", "greedy"], [1, 2, 4])
    third = _resume_dir(tmp_path / "c", ["ev", "greedy"], [2, 3])
    assert main(["runs", str(first), str(second), str(third)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "agent 0, 4 deal groups in common, seed 3"  # chunk 2 only
    assert [line.split()[0] for line in lines[2:]] == [str(first), str(second), str(third)]
    assert lines[-1].endswith("+0.0 [+0.0, +0.0]")  # the first's games, replayed
    assert "[" in lines[3].split("%")[-1]  # the second row's paired difference


def test_compare_runs__a_resume_directory_pairs_with_the_games_csv_of_the_same_run(
    tmp_path, capsys
):
    chunks = _resume_dir(tmp_path / "chunks", ["ev", "greedy"], [0, 1, 2, 3, 4])
    games = tmp_path / "games.csv"
    assert evaluate_main(["--agents", "ev", "greedy", "--games", "40", "--seed", "3",
                          "--no-progress", "--no-ratings", "--games-csv", str(games)]) == 0
    capsys.readouterr()
    assert main(["runs", str(chunks), str(games)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "agent 0, 20 deal groups in common, seed 3"
    assert out.rstrip().endswith("+0.0 [+0.0, +0.0]")  # the same games either way


def test_compare_runs__a_directory_with_nothing_finished_is_one_line_exit_2(tmp_path, capsys):
    first = _resume_dir(tmp_path / "a", ["ev", "greedy"], [])
    (tmp_path / "plain").mkdir()
    for other, message in ((first, "no chunk finished yet (0 of 5)"),
                           (tmp_path / "plain", "not a --resume directory of evaluate.py")):
        assert main(["runs", str(other), str(other)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and message in err and err.count("\n") == 1, err


@pytest.mark.slow  # shipped-model games
def test_compare_networks__same_network_same_deals_differs_by_zero(capsys):
    two, four = MODELS / "ppo_2p.zip", MODELS / "ppo_4p.zip"
    assert main(["networks", str(two), str(two), "--games", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "8 games against ev, seed 4242"
    # the same network on the same deals: the same games, so a paired difference of 0
    assert lines[-1].startswith(str(two)) and lines[-1].endswith("+0.0 [+0.0, +0.0]"), lines
    assert main(["networks", str(four), "--games", "4", "--seed", "1"]) == 0
    assert capsys.readouterr().out.startswith("4 games against ev ev ev, seed 1")
    assert main(["networks", str(four), "--games", "5", "--seed", "1"]) == 0
    assert capsys.readouterr().out.startswith(
        "8 games (asked 5, rounded up to whole deal groups) against ev ev ev, seed 1")


@pytest.mark.slow  # shipped-model games
def test_compare_networks__games_csv_dir_files_pair_again_to_the_same_table(tmp_path, capsys):
    two, evfit = MODELS / "ppo_2p.zip", MODELS / "ppo_2p_evfit.zip"
    folder = tmp_path / "kept"
    assert main(["networks", str(two), str(evfit), "--games", "12", "--seed", "3",
                 "--games-csv-dir", str(folder)]) == 0
    played = capsys.readouterr().out.splitlines()
    first, second = folder / "1-ppo_2p.games.csv", folder / "2-ppo_2p_evfit.games.csv"
    assert played[-1] == f"games: {first}, {second}"
    assert main(["runs", str(first), str(second)]) == 0
    paired = capsys.readouterr().out.splitlines()
    assert paired[0] == "agent 0, 6 deal groups in common, seed 3"
    # the same win rates and paired difference, read back from the files
    assert [line.split()[1:] for line in paired[2:]] == [line.split()[1:] for line in played[2:4]]


def test_compare_networks__unusable_games_csv_dir_fails_before_any_game(tmp_path, capsys):
    taken = tmp_path / "a_file"
    taken.write_text("")
    assert main(["networks", str(MODELS / "ppo_2p.zip"), "--games-csv-dir", str(taken)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"skyjo-compare: error: --games-csv-dir {taken}: ")
    assert err.count("\n") == 1, err


@pytest.mark.parametrize(
    "networks, extra, message",
    [
        (["ppo_2p.zip", "ppo_4p.zip"], [], "ppo_4p.zip was trained for other rules than"),
        (["ppo_2p.md"], [], "is corrupt"),
        (["no_such.zip"], [], "does not exist"),
        (["ppo_2p.zip"], ["--games", "0"], "--games must be >= 1"),
    ],
)
def test_compare_networks__bad_input_is_one_line_exit_2(capsys, networks, extra, message):
    assert main(["networks", *(str(MODELS / name) for name in networks), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("skyjo-compare: error: ")
    assert message in err and err.count("\n") == 1, err


def test_compare__missing_subcommand_is_a_usage_error(capsys):
    assert main([]) == 2
    assert "{runs,networks,curves}" in capsys.readouterr().err


def _eval_log(run_dir, rates_by_stage: list[tuple[str, float]]) -> None:
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("num_players: 3\n")
    lines = [json.dumps({"timesteps": (i + 1) * 1000, "stage": stage,
                         "results": {"ev": {"win_rate": rate,
                                            "win_rate_ci": [rate - 0.02, rate + 0.02]}}})
             for i, (stage, rate) in enumerate(rates_by_stage)]
    (run_dir / "eval.jsonl").write_text("\n".join(lines) + "\n")


def test_compare_curves__prints_first_best_last_and_writes_the_chart(tmp_path, capsys):
    _eval_log(tmp_path / "run", [("grid", 0.30), ("grid", 0.45), ("finetune", 0.62),
                                 ("finetune", 0.58)])
    chart = tmp_path / "curve.png"
    assert main(["curves", str(tmp_path / "run"), "--out", str(chart)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(f"{tmp_path / 'run'}, ev"))
    assert row.split()[-6:] == ["30.0%", "62.0%", "58.0%", "3,000", "steps", "(finetune)"]
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_compare_curves__a_damaged_log_is_one_line_exit_2(tmp_path, capsys):
    _eval_log(tmp_path / "run", [("grid", 0.30)])
    with (tmp_path / "run" / "eval.jsonl").open("a") as log:
        log.write('{"timesteps": 2000, "results": {"ev": {"win_rate": "high"}}}\n')
    assert main(["curves", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "line 2" in err and "win_rate" in err and len(err.splitlines()) == 1

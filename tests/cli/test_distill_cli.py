"""skyjo-distill: expert-iteration steps on a saved network; one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.cli.distill import evaluate_command, main, step_paths
from agents.ppo.checkpoint import read_metadata

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "ppo_2p.zip"
TINY = "search(samples=2,depth=2,leaf=critic)"


@pytest.mark.slow  # search games and network fitting
def test_main__two_steps_chain_their_networks(tmp_path, capsys):
    out = tmp_path / "distilled.zip"
    code = main(["--checkpoint", str(SHIPPED), "--out", str(out), "--steps", "2", "--games", "1",
                 "--search", TINY])
    assert code == 0, capsys.readouterr().err
    first = tmp_path / "distilled_step1.zip"
    history = read_metadata(out)["distilled"]
    assert [step["source"] for step in history] == [str(SHIPPED), str(first)]
    printed = capsys.readouterr().out
    assert "step 2/2" in printed and "played the searched move" in printed
    assert f"evaluate it: python evaluate.py --agents ppo:{out} ev --games 2000" in printed


def test_evaluate_command__every_other_seat_is_ev():
    four = SHIPPED.with_name("ppo_4p.zip")
    assert evaluate_command(four) == f"python evaluate.py --agents ppo:{four} ev ev ev --games 2000"


def test_step_paths__last_step_is_out():
    assert step_paths(Path("a/b.zip"), 3) == [Path("a/b_step1.zip"), Path("a/b_step2.zip"),
                                             Path("a/b.zip")]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--checkpoint", "/no/such.zip"], "--checkpoint '/no/such.zip' is not a file"),
        (["--anchor", "1"], "--anchor must be in [0, 1), got 1.0"),
        (["--search", "search(sample=2)"], "unknown search option 'sample'"),
        (["--search", "ev"], "'ev' is not 'search' or 'search(OPTIONS)'"),
        (["--games", "0"], "--games must be >= 1, got 0"),
        (["--out", "x.pt"], "must end in .zip"),
        (["--soft-temperature", "0"], "--soft-temperature must be > 0, got 0.0"),
        (["--soft-temperature", "0.03", "--anchor", "0.5"], "soft targets (--soft-temperature) "
         "hold it already"),
        (["--checkpoint", str(SHIPPED.with_name("ppo_2p.md"))], "is corrupt"),
        (["--out", str(SHIPPED)], "would overwrite --checkpoint"),
        (["--value-mix", "0.5"], "--value-mix applies only with --critic-only"),
        (["--critic-only", "--value-mix", "2"], "--value-mix must be in [0, 1], got 2.0"),
        (["--critic-only", "--soft-temperature", "0.03"], "--critic-only fits the critic alone"),
        (["--research"], "--research searches the decisions of saved games again: it needs "
         "--games-from"),
    ],
)
def test_main__bad_input_is_one_line_exit_2(tmp_path, capsys, extra, message):
    argv = ["--checkpoint", str(SHIPPED), "--out", str(tmp_path / "o.zip"), *extra]
    assert main(argv) == 2
    printed = capsys.readouterr()
    assert message in printed.err and printed.err.count("\n") == 1
    assert printed.out == ""  # refused before any step starts
    assert not (tmp_path / "o.zip").exists()


def test_main__no_step_overwrites_the_starting_checkpoint(tmp_path, capsys):
    start = tmp_path / "net_step1.zip"  # what step 1 of --out net.zip --steps 2 would write
    start.write_bytes(SHIPPED.read_bytes())
    argv = ["--checkpoint", str(start), "--out", str(tmp_path / "net.zip"), "--steps", "2"]
    assert main(argv) == 2
    assert f"step network '{start}' would overwrite --checkpoint" in capsys.readouterr().err
    assert start.read_bytes() == SHIPPED.read_bytes()


@pytest.mark.slow  # search games and network fitting
def test_main__counts_each_step_search_games_on_the_progress(tmp_path, capsys, monkeypatch):
    opened, counted = [], []

    class RecordingBar:
        def __init__(self, total, progress, in_flight=0, unit="games"):
            opened.append((total, progress, in_flight, unit))

        def update(self, games):
            counted.append(games)

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            return None

    monkeypatch.setattr("agents.evaluation.games.progress_bar", RecordingBar)
    out = tmp_path / "distilled.zip"
    code = main(["--checkpoint", str(SHIPPED), "--out", str(out), "--steps", "2", "--games", "2",
                 "--search", TINY, "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert opened == [(2, False, 0, "games")] * 2  # one per step; --no-progress hides it
    assert counted == [2, 2]


@pytest.mark.parametrize("games, workers, expected", [(40, 2, 32), (20, 2, 20), (40, 0, 0)])
def test_parallel_games__the_first_chunks_ray_starts_together(games, workers, expected):
    import argparse

    from agents.cli.distill import parallel_games

    assert parallel_games(argparse.Namespace(games=games, workers=workers)) == expected


@pytest.mark.slow  # search games and network fitting
@pytest.mark.parametrize("soft", [[], ["--soft-temperature", "0.03"]])
def test_main__kept_games_refit_the_same_network_without_searching(tmp_path, capsys, soft):
    import torch

    from agents.ppo.checkpoint import load_policy

    searched = tmp_path / "searched.zip"
    assert main(["--checkpoint", str(SHIPPED), "--out", str(searched), "--games", "1",
                 "--search", TINY, "--keep-games", "--no-progress", *soft]) == 0
    games = tmp_path / "searched.games.npz"
    assert games.is_file()
    refit = tmp_path / "refit.zip"
    code = main(["--checkpoint", str(SHIPPED), "--out", str(refit), "--games-from", str(games),
                 *soft])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert f"fitting {SHIPPED} to the games in {games}" in printed
    assert ("fitted to soft targets" in printed) == bool(soft)
    # same games, same fit seed: the same weights as the step that searched
    first, second = load_policy(searched).state_dict(), load_policy(refit).state_dict()
    assert all(torch.equal(first[name], second[name]) for name in first)
    step = read_metadata(refit)["distilled"][-1]
    assert step["search"] == TINY and step["games"] == 1
    assert step["games_from"]["path"] == str(games)
    assert step["soft_temperature"] == (0.03 if soft else None)


@pytest.mark.slow  # search games and network fitting
def test_main__research_searches_the_saved_decisions_again_and_records_the_new_search(
    tmp_path, capsys
):
    searched = tmp_path / "searched.zip"
    assert main(["--checkpoint", str(SHIPPED), "--out", str(searched), "--games", "1",
                 "--search", TINY, "--keep-games", "--no-progress"]) == 0
    games = tmp_path / "searched.games.npz"
    capsys.readouterr()
    other = "search(samples=3,depth=2,leaf=margin)"
    refit = tmp_path / "refit.zip"
    code = main(["--checkpoint", str(SHIPPED), "--out", str(refit), "--games-from", str(games),
                 "--research", "--search", other, "--no-progress"])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert re.search(rf"searching the [\d,]+ decisions of {re.escape(str(games))} again with "
                     rf"{re.escape(other)} over {re.escape(str(SHIPPED))}", printed)
    step = read_metadata(refit)["distilled"][-1]
    assert step["search"] == other and step["researched"] is True
    assert step["games_from"]["search"] == TINY


@pytest.mark.slow  # search games and network fitting
def test_main__critic_only_keeps_the_actor_and_refits_the_critic(tmp_path, capsys):
    import torch

    from agents.ppo.checkpoint import load_policy
    from agents.training.imitation import actor_parameters, critic_parameters

    out = tmp_path / "critic.zip"
    code = main(["--checkpoint", str(SHIPPED), "--out", str(out), "--games", "1",
                 "--search", TINY, "--critic-only", "--value-mix", "0.25", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert "the critic's squared error to the targets" in capsys.readouterr().out
    before, after = load_policy(SHIPPED), load_policy(out)
    assert all(torch.equal(a, b) for a, b in zip(actor_parameters(before),
                                                 actor_parameters(after), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(critic_parameters(before),
                                                     critic_parameters(after), strict=True))
    step = read_metadata(out)["distilled"][-1]
    assert step["critic_only"] is True and step["value_mix"] == 0.25 and step["anchor"] is None


def test_main__soft_targets_refuse_games_saved_without_search_values(tmp_path, capsys):
    from agents.registry import make_agent
    from agents.training.expert import save_recorded_games
    from agents.training.imitation import record_games
    from skyjo_env.core.rules import SkyjoRules

    rules = SkyjoRules()
    games = tmp_path / "old.games.npz"
    save_recorded_games(record_games(rules, [make_agent("ev", rules, 0)], 1, seed=1), games, {})
    argv = ["--checkpoint", str(SHIPPED), "--out", str(tmp_path / "o.zip"), "--games-from",
            str(games), "--soft-temperature", "0.03"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "holds no search action values" in err and err.count("\n") == 1
    assert not (tmp_path / "o.zip").exists()


@pytest.mark.parametrize(
    "content, extra, message",
    [
        (b"not a zip at all", [], "is not a readable skyjo-distill games file"),
        (b"PK\x03\x04truncated", [], "is not a readable skyjo-distill games file"),
        (None, ["--steps", "2"], "--games-from fits one step"),
    ],
)
def test_main__bad_games_file_is_one_line_exit_2(tmp_path, capsys, content, extra, message):
    games = tmp_path / "g.games.npz"
    games.write_bytes(content or b"")
    argv = ["--checkpoint", str(SHIPPED), "--out", str(tmp_path / "o.zip"),
            "--games-from", str(games), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "o.zip").exists()

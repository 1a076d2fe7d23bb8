"""Replays: the recorder keeps the chosen games of a tournament, the files play back to the
logged totals, evaluate.py writes them with --replays, and bad logs are refused by name."""

from __future__ import annotations

import json

import pytest
from web_replays import write_replays

from agents.cli.evaluate import main as evaluate_main
from agents.evaluation.replays import (
    Replay,
    ReplayError,
    ReplayRecorder,
    play_back,
    read_replay,
)
from agents.evaluation.tournament import play_tournament
from agents.registry import make_agent
from skyjo_env.core import layout, load_rules


def test_recorder__first_writes_games_zero_to_n_minus_one_that_replay_to_their_totals(tmp_path):
    written = write_replays(tmp_path, count=3, select="first", games=6)
    assert sorted(p.name for p in written) == [f"game-00000{i}.json" for i in range(3)]
    for path in written:
        replay = read_replay(path)
        state = play_back(replay)
        assert tuple(int(t) for t in state.seat[0, :, layout.TOTAL]) == replay.totals


def test_recorder__rotations_swap_the_seats_of_the_agents(tmp_path):
    write_replays(tmp_path, count=2, select="first")
    first, second = (read_replay(tmp_path / f"game-00000{i}.json") for i in range(2))
    assert [name for name, _ in first.seats] == ["ev", "greedy"]
    assert [name for name, _ in second.seats] == ["greedy", "ev"]
    assert first.seed == second.seed  # one deal, two rotations
    assert second.source["first_agent_seat"] == 1


def test_recorder__lost_keeps_only_games_the_first_agent_did_not_win(tmp_path):
    rules = load_rules("single_round", num_players=2)
    agents = [make_agent("random", rules, 1), make_agent("ev", rules, 2)]
    recorder = ReplayRecorder(tmp_path, 3, "lost", rules, 0, ["random", "ev"], ["random", "ev"])
    result = play_tournament(agents, rules, 10, 0, progress=False, ratings=False,
                             recorder=recorder)
    assert len(recorder.written) == 3
    lost = {int(g) for g in (result.records.win_share[:, 0] == 0).nonzero()[0]}
    for path in recorder.written:
        replay = read_replay(path)
        assert replay.source["tournament_game"] in lost
        seat = replay.source["first_agent_seat"]
        assert replay.totals[seat] > min(replay.totals)


def test_recorder__bad_arguments_are_refused(tmp_path):
    rules = load_rules("official")
    with pytest.raises(ValueError, match="select"):
        ReplayRecorder(tmp_path, 1, "best", rules, 0, ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="count"):
        ReplayRecorder(tmp_path, 0, "first", rules, 0, ["a", "b"], ["a", "b"])


def test_recorder__recording_leaves_the_games_unchanged(tmp_path):
    rules = load_rules("single_round", num_players=2)
    agents = [make_agent("ev", rules, 1), make_agent("greedy", rules, 2)]
    plain = play_tournament(agents, rules, 6, 3, progress=False, ratings=False)
    recorder = ReplayRecorder(tmp_path, 6, "first", rules, 3, ["ev", "greedy"],
                              ["ev", "greedy"])
    recorded = play_tournament(agents, rules, 6, 3, progress=False, ratings=False,
                               recorder=recorder)
    assert (plain.records.total == recorded.records.total).all()
    assert (plain.records.decisions == recorded.records.decisions).all()
    for path in recorder.written:
        replay = read_replay(path)
        game = replay.source["tournament_game"]
        assert len(replay.actions) == plain.records.decisions[game]


def _replay_json(tmp_path):
    path = write_replays(tmp_path, count=1)[0]
    return json.loads(path.read_text())


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(format="other"), "format"),
    (lambda d: d.update(version=99), "version"),
    (lambda d: d["rules"].update(rows=0), "rules"),
    (lambda d: d.update(seed=-1), "seed"),
    (lambda d: d.update(seats=[{"name": "a"}]), "seats"),
    (lambda d: d.update(actions="draw"), "actions"),
    (lambda d: d["actions"].__setitem__(3, "x"), "actions[3]"),
    (lambda d: d.update(totals=[1]), "totals"),
    (lambda d: d.update(truncated="no"), "truncated"),
    (lambda d: d.update(source=[]), "source"),
])
def test_replay__malformed_fields_are_named(tmp_path, change, field):
    data = _replay_json(tmp_path)
    change(data)
    with pytest.raises(ReplayError, match=rf"^{field.replace('[', '.').replace(']', '.')}"):
        Replay.from_json(data)


@pytest.mark.parametrize("change, where", [
    (lambda d: d["actions"].__setitem__(4, 200), "actions[4]"),
    (lambda d: d["actions"].pop(), "actions"),
    (lambda d: d["actions"].append(0), "actions["),
    (lambda d: d["totals"].__setitem__(0, d["totals"][0] + 1), "totals"),
])
def test_replay__logs_that_do_not_play_back_are_named(tmp_path, change, where):
    data = _replay_json(tmp_path)
    change(data)
    with pytest.raises(ReplayError, match=where.replace("[", r"\[")):
        play_back(Replay.from_json(data))


def test_read_replay__a_file_that_is_not_json_is_a_replay_error(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{")
    with pytest.raises(ReplayError, match="cannot read replay"):
        read_replay(path)


def test_evaluate_cli__replays_writes_the_chosen_games(tmp_path, capsys):
    folder = tmp_path / "replays"
    code = evaluate_main(["--agents", "greedy", "ev", "--games", "4", "--rules", "single_round",
                          "--replays", str(folder), "--replay-games", "2", "--no-progress",
                          "--no-ratings"])
    assert code == 0
    assert "wrote 2 replays" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == ["game-000000.json", "game-000001.json"]
    read_replay(folder / "game-000000.json")


@pytest.mark.parametrize("extra, message", [
    (["--replay-games", "0"], "--replay-games"),
    (["--workers", "2"], "--replays applies only"),
])
def test_evaluate_cli__bad_replay_options_exit_2(tmp_path, capsys, extra, message):
    code = evaluate_main(["--agents", "greedy", "ev", "--games", "2", "--replays",
                          str(tmp_path), *extra])
    assert code == 2
    assert message in capsys.readouterr().err


def test_evaluate_cli__replays_into_a_file_exits_2(tmp_path, capsys):
    target = tmp_path / "file.json"
    target.write_text("")
    assert evaluate_main(["--agents", "greedy", "ev", "--games", "2", "--replays",
                          str(target)]) == 2
    assert "is a file" in capsys.readouterr().err

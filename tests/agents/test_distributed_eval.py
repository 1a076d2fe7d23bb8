"""Tournaments sharded over Ray: the same report whatever the number of workers, the
in-process report for deterministic agents, and the in-process one-line errors."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from agents.cli.evaluate import main
from agents.evaluation.distributed import (
    chunk_ranges,
    default_chunk_deals,
    evaluate_agents_distributed,
    play_chunk,
)
from agents.evaluation.games import AgentActionError, GameRecords, play_deals, play_games
from agents.evaluation.tournament import evaluate_agents
from agents.parallel import (
    TOKEN_AUTH_LOGGER,
    DistributedSetupError,
    quiet_token_auth_notice,
    ray_session,
)
from agents.registry import AgentSpecError
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import RandomAgent

ray = pytest.importorskip("ray")

TIMING = ("elapsed_s", "games_per_second")

FAKE_AGENTS = """
class Fragile:
    name = "fragile"

    def __init__(self, rules, seed):
        pass

    def act(self, observations, action_masks):
        raise RuntimeError("kaboom")
"""
FAKE_MODULE = "skyjo_distributed_fake_agents"


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """One local Ray (3 CPUs) for the whole module, with a fake agent module importable in
    the driver and in the workers."""
    folder = tmp_path_factory.mktemp("modules")
    (folder / f"{FAKE_MODULE}.py").write_text(FAKE_AGENTS)
    sys.path.insert(0, str(folder))
    python_path = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    ray.init(
        num_cpus=3,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {"PYTHONPATH": python_path}},
    )
    yield ray
    ray.shutdown()
    sys.path.remove(str(folder))
    sys.modules.pop(FAKE_MODULE, None)


def _report(result) -> dict:
    data = result.to_dict()
    for key in TIMING:
        data.pop(key)
    return data


def _assert_same_records(first: GameRecords, second: GameRecords) -> None:
    for name in GameRecords.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name), err_msg=name)


def test_default_chunk_deals__small_tournaments_are_split_for_every_worker():
    assert default_chunk_deals(200) == 13  # 400 two-player games: 16 chunks, not one
    assert len(chunk_ranges(200, default_chunk_deals(200))) == 16
    assert default_chunk_deals(5) == 1
    assert default_chunk_deals(5000) == 256  # big tournaments keep big batches


def test_chunk_ranges__cover_every_deal_once_in_order():
    assert chunk_ranges(10, 4) == [range(0, 4), range(4, 8), range(8, 10)]
    assert chunk_ranges(3, 8) == [range(0, 3)]


def test_play_deals__chunks_concatenated_equal_the_whole_tournament():
    from agents.baselines.heuristics import EVAgent, GreedyAgent

    rules = SkyjoRules()
    agents = [EVAgent(rules, seed=0), GreedyAgent(rules, seed=1)]
    whole, _ = play_games(agents, rules, 10, seed=9)
    parts = [play_deals(agents, rules, 9, deals)[0] for deals in (range(0, 3), range(3, 5))]
    assert parts[1].deal.tolist() == [3, 3, 4, 4]
    _assert_same_records(GameRecords.concatenate(parts), whole)
    with pytest.raises(ValueError, match="a part starts at deal group 0, expected 5"):
        GameRecords.concatenate(parts[::-1])


@pytest.mark.parametrize("deals", [range(0), range(-1, 2), range(0, 4, 2), [0, 1]])
def test_play_deals__bad_range_is_refused(deals):
    with pytest.raises(ValueError, match="deals must be a non-empty range"):
        play_deals([RandomAgent(0), RandomAgent(1)], SkyjoRules(), 0, deals)


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__same_report_with_1_2_3_workers(local_ray):
    rules = SkyjoRules()
    specs = ["random", "greedy"]
    results = [
        evaluate_agents_distributed(specs, rules, 90, 7, workers=w, chunk_deals=12, progress=False)
        for w in (1, 2, 3)
    ]
    reports = [_report(result) for result in results]
    assert reports[0] == reports[1] == reports[2]
    assert reports[0]["games"] == 90 and [a["spec"] for a in reports[0]["agents"]] == specs
    # workers only decide who plays a chunk: the chunks played here, in order, are the same
    chunks = chunk_ranges(45, 12)
    here = GameRecords.concatenate(
        [play_chunk(specs, rules.to_dict(), 7, i, deals)[0] for i, deals in enumerate(chunks)]
    )
    _assert_same_records(results[1].records, here)


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__equals_in_process_for_deterministic_agents(local_ray):
    rules = SkyjoRules()
    specs = ["ev", "greedy"]
    sharded = evaluate_agents_distributed(specs, rules, 120, 3, chunk_deals=25, progress=False)
    in_process = evaluate_agents(specs, rules, 120, 3, progress=False)
    assert _report(sharded) == _report(in_process)
    _assert_same_records(sharded.records, in_process.records)


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__progress_bar_advances_per_chunk(local_ray, monkeypatch):
    import agents.evaluation.distributed as distributed

    updates = []

    class Bar:
        def __init__(self, total, progress, initial=0, in_flight=0):
            updates.append(("total", total, progress, initial, in_flight))

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            return False

        def update(self, games):
            updates.append(games)

    monkeypatch.setattr(distributed, "progress_bar", Bar)
    evaluate_agents_distributed(
        ["random", "random"], SkyjoRules(), 38, 0, workers=2, chunk_deals=5, progress=True
    )
    assert updates[0] == ("total", 38, True, 0, 20)  # two 5-deal chunks start together
    assert sorted(updates[1:]) == [8, 10, 10, 10]  # one update per chunk, all games counted


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__agent_error_in_worker_is_the_in_process_error(local_ray):
    rules = SkyjoRules()
    specs = ["random", f"{FAKE_MODULE}:Fragile"]
    with pytest.raises(AgentActionError) as in_process:
        evaluate_agents(specs, rules, 8, 0, progress=False)
    with pytest.raises(AgentActionError) as sharded:
        evaluate_agents_distributed(specs, rules, 8, 0, chunk_deals=2, progress=False)
    assert type(sharded.value) is AgentActionError  # unwrapped, not a RayTaskError
    assert str(sharded.value) == str(in_process.value)
    assert "failed in act(): RuntimeError: kaboom" in str(sharded.value)


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__spec_error_in_worker_is_the_registry_error(local_ray):
    with pytest.raises(AgentSpecError, match="unknown agent spec 'wizard'") as error:
        evaluate_agents_distributed(["random", "wizard"], SkyjoRules(), 4, 0, progress=False)
    assert type(error.value) is AgentSpecError


@pytest.mark.parametrize(
    "address, words",
    [
        ("127.0.0.1:1", "cannot reach a Ray cluster at '127.0.0.1:1' within 0.5 s"),
        ("nowhere", "Ray address 'nowhere' is not HOST:PORT"),
    ],
)
def test_ray_session__bad_address_fails_fast_in_one_line(address, words):
    started = time.perf_counter()
    with pytest.raises(DistributedSetupError, match=words) as error:
        with ray_session(address=address, connect_timeout_s=0.5):
            pass
    assert "\n" not in str(error.value)
    assert time.perf_counter() - started < 5  # Ray alone retries a wrong address for minutes


@pytest.mark.slow  # Ray
def test_main__workers_report_equals_in_process_report(local_ray, tmp_path, capsys):
    argv = ["--agents", "ev", "greedy", "--games", "60", "--seed", "4", "--no-progress"]
    assert main(argv + ["--json", str(tmp_path / "a.json")]) == 0
    assert main(argv + ["--workers", "2", "--json", str(tmp_path / "b.json")]) == 0
    assert ray.is_initialized()  # a Ray it did not start is left running
    first, second = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    for report in (first, second):
        for key in TIMING:
            report.pop(key)
    assert first == second


@pytest.mark.slow  # Ray
def test_main__agent_error_in_worker_is_one_line(local_ray, capsys):
    spec = f"{FAKE_MODULE}:Fragile"
    status = main(["--agents", "random", spec, "--games", "4", "--workers", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert f"agent 'fragile' (spec '{spec}') failed in act(): RuntimeError: kaboom" in err


def test_task_result__ray_failure_becomes_one_line_run_error():
    import types

    from agents.parallel import DistributedRunError, task_result

    def crashed(ref):
        raise ray.exceptions.WorkerCrashedError()

    fake_ray = types.SimpleNamespace(get=crashed, exceptions=ray.exceptions)
    with pytest.raises(DistributedRunError, match="a Ray task failed: WorkerCrashedError") as error:
        task_result(fake_ray, object())
    assert "\n" not in str(error.value)


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__resumed_run_reports_as_one_never_stopped(
    local_ray, tmp_path, monkeypatch
):
    from agents.evaluation.resume import ChunkStore

    rules = SkyjoRules()
    specs = ["random", "greedy"]  # random: per-chunk streams, so a replayed chunk must match
    whole = evaluate_agents_distributed(specs, rules, 40, 5, chunk_deals=4, progress=False)
    saved = []
    real_save = ChunkStore.save

    def stop_after_two(self, chunk, records, names, elapsed_s):
        real_save(self, chunk, records, names, elapsed_s)
        saved.append(chunk)
        if len(saved) == 2:
            raise KeyboardInterrupt  # Ctrl-C after two chunks were kept

    monkeypatch.setattr(ChunkStore, "save", stop_after_two)
    directory = tmp_path / "chunks"
    with pytest.raises(KeyboardInterrupt):
        evaluate_agents_distributed(specs, rules, 40, 5, workers=1, chunk_deals=4,
                                    progress=False, resume=directory)
    monkeypatch.setattr(ChunkStore, "save", real_save)
    kept = sorted(path.name for path in directory.glob("chunk_*.npz"))
    assert kept == ["chunk_00000.npz", "chunk_00001.npz"]
    resumed = evaluate_agents_distributed(specs, rules, 40, 5, workers=2, chunk_deals=4,
                                          progress=False, resume=directory)
    assert _report(resumed) == _report(whole)
    _assert_same_records(resumed.records, whole.records)
    assert len(list(directory.glob("chunk_*.npz"))) == 5


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__complete_resume_directory_needs_no_ray(
    local_ray, tmp_path, monkeypatch
):
    import agents.evaluation.distributed as distributed
    import agents.parallel as parallel

    specs = ["ev", "greedy"]
    first = evaluate_agents_distributed(specs, SkyjoRules(), 20, 2, chunk_deals=5,
                                        progress=False, resume=tmp_path)
    # any use of Ray would fail: the session where evaluation opens it, and every way in
    monkeypatch.setattr(distributed, "ray_session", None)
    monkeypatch.setattr(parallel, "ray_session", None)
    monkeypatch.setattr(parallel, "import_ray", None)
    again = evaluate_agents_distributed(specs, SkyjoRules(), 20, 2, chunk_deals=5,
                                        progress=False, resume=tmp_path)
    assert _report(again) == _report(first)


@pytest.mark.slow  # Ray
def test_main__resume_with_other_arguments_is_a_one_line_error(local_ray, tmp_path, capsys):
    argv = ["--agents", "ev", "greedy", "--games", "12", "--workers", "1", "--no-progress",
            "--resume", str(tmp_path / "run")]
    assert main(argv + ["--seed", "1"]) == 0
    capsys.readouterr()
    assert main(argv + ["--seed", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "holds another tournament: seed was 1, this run has 2" in err


@pytest.mark.slow  # Ray
def test_evaluate_agents_distributed__all_orders_equal_in_process_and_resume_by_seating(
    local_ray, tmp_path
):
    specs = ["ev", "greedy", "ev"]
    sharded = evaluate_agents_distributed(specs, SkyjoRules(), 30, 6, chunk_deals=2,
                                          progress=False, seating="all", resume=tmp_path / "a")
    in_process = evaluate_agents(specs, SkyjoRules(), 30, 6, progress=False, seating="all")
    assert sharded.games == 30 and sharded.deals == 5
    assert _report(sharded) == _report(in_process)
    _assert_same_records(sharded.records, in_process.records)
    # the kept chunks are read back as all-order chunks: the same report without Ray
    again = evaluate_agents_distributed(specs, SkyjoRules(), 30, 6, chunk_deals=2,
                                        progress=False, seating="all", resume=tmp_path / "a")
    assert _report(again) == _report(in_process)
    from agents.evaluation.resume import ResumeError

    with pytest.raises(ResumeError, match="seating"):  # a cyclic run is another tournament
        evaluate_agents_distributed(specs, SkyjoRules(), 30, 6, chunk_deals=2,
                                    progress=False, resume=tmp_path / "a")


def test_quiet_token_auth_notice__drops_only_the_enabled_notice_and_only_in_the_block(caplog):
    logger = logging.getLogger(TOKEN_AUTH_LOGGER)
    enabled = "Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=..."
    disabled = "Token authentication is disabled for this Ray cluster. Anyone with ..."
    with caplog.at_level(logging.WARNING, logger=TOKEN_AUTH_LOGGER):
        with quiet_token_auth_notice():
            logger.warning(enabled)
            logger.warning(disabled)
        logger.warning(enabled)
    assert [record.getMessage() for record in caplog.records] == [disabled, enabled]


@pytest.mark.slow  # Ray
def test_ray_session__new_local_cluster_keeps_token_auth_without_the_warning(tmp_path):
    # a fresh process and home: Ray must not be running yet, and no token exists
    probe = (
        "from agents.parallel import ray_session\n"
        "with ray_session(workers=1) as ray:\n"
        "    print('sum', ray.get(ray.remote(lambda: 1 + 1).remote()))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("RAY_AUTH_MODE", None)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "sum 2" in done.stdout
    assert "Token authentication" not in done.stderr
    assert (tmp_path / ".ray" / "auth_token").is_file()  # Ray's protection still on

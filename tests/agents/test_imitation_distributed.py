"""Distributed imitation data: the same arrays for the same seeds with 0, 1 or 2 Ray
workers; Ray imported only when asked for; a one-line error when it is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.registry import make_agent
from agents.training.config import TrainConfig, TrainConfigError
from agents.training.expert import collect_expert_games
from agents.training.imitation import (
    ChunksStopped,
    DataWorkersError,
    chunk_sizes,
    collect_chunked_demonstrations,
    collect_demonstrations,
    run_chunks,
)
from agents.training.start import check_warm_start, prepare_start
from skyjo_env.core.rules import SkyjoRules

ROOT = Path(__file__).resolve().parents[2]
RULES = SkyjoRules()
#: 5 games in chunks of 2: three chunks, the last one short
TINY = {"rules": RULES, "teacher_spec": "ev", "games": 5, "seed": 11, "teacher_seed": 12,
        "chunk_games": 2}


def test_chunk_sizes__fixed_chunks_then_the_remainder():
    assert chunk_sizes(5, 2) == [2, 2, 1]
    assert chunk_sizes(512, 256) == [256, 256]
    with pytest.raises(ValueError, match="chunk_games=0"):
        chunk_sizes(5, 0)


@pytest.mark.slow  # Ray
def test_collect_chunked_demonstrations__same_arrays_with_0_1_and_2_workers(local_ray):
    in_process = collect_chunked_demonstrations(**TINY, workers=0)
    observations, masks, actions = in_process
    assert observations.dtype == np.float32 and masks.dtype == bool and actions.dtype == np.int64
    assert len(actions) > 100 and masks[np.arange(len(actions)), actions].all()
    for workers in (1, 2):
        distributed = collect_chunked_demonstrations(**TINY, workers=workers)
        for expected, got in zip(in_process, distributed, strict=True):
            np.testing.assert_array_equal(got, expected)
    assert local_ray.is_initialized()  # a Ray it did not start is left running


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.slow)])  # 2: Ray
def test_collect_chunked_demonstrations__reports_each_chunk_as_it_ends(workers, request):
    if workers:
        request.getfixturevalue("local_ray")
    ended = []
    collect_chunked_demonstrations(**TINY, workers=workers, on_chunk_done=ended.append)
    assert sorted(ended) == [1, 2, 2]  # every chunk once, with its game count


def test_collect_chunked_demonstrations__chunk_is_a_seeded_unit():
    # the first chunk is exactly the plain collector on the chunk's own seeds, and another
    # root seed gives other games
    from agents.training.imitation import chunk_seed

    teacher = make_agent("ev", RULES, seed=chunk_seed(12, 0))
    first = collect_demonstrations(RULES, [teacher], 2, chunk_seed(11, 0))
    whole = collect_chunked_demonstrations(**TINY)
    np.testing.assert_array_equal(whole[2][: len(first[2])], first[2])
    other = collect_chunked_demonstrations(**{**TINY, "seed": 13})
    assert len(other[2]) != len(whole[2]) or not np.array_equal(other[0], whole[0])


@pytest.mark.slow  # Ray
def test_run_chunks__results_come_back_in_chunk_order(local_ray):
    def slow_first(chunk: int, size: int) -> tuple[int, int]:
        # a local function: pickled by value, so Ray workers need not import this file
        if chunk == 0:  # finishes last
            import time

            time.sleep(0.5)
        return chunk, size

    assert run_chunks(slow_first, [3, 1, 2], workers=2) == [(0, 3), (1, 1), (2, 2)]


def test_run_chunks__without_ray_is_one_line_naming_data_workers(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    with pytest.raises(DataWorkersError) as caught:
        collect_chunked_demonstrations(**TINY, workers=2)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("data_workers=2 needs Ray")
    # the in-process path never imports Ray
    assert len(collect_chunked_demonstrations(**{**TINY, "games": 1}, workers=0)[2]) > 0


def test_prepare_start__refuses_data_workers_without_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    config = TrainConfig(data_workers=2, eval_opponents=["random"])
    with pytest.raises(TrainConfigError, match=r"^config key 'data_workers': got 2, which needs Ray"):
        prepare_start(config)
    # a new run's own check (Trainer.run) refuses it too; a resumed run plays no warm start
    with pytest.raises(TrainConfigError, match=r"^config key 'data_workers': got 2, which needs Ray"):
        check_warm_start(config, config.resolve_rules())
    prepare_start(config, resume=True)
    prepare_start(TrainConfig(data_workers=0, eval_opponents=["random"]))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"data_workers": -1}, "config key 'data_workers': got -1 (int), expected an integer in"),
        ({"data_workers": True}, "config key 'data_workers': got True (bool)"),
        ({"ray_address": ""}, "config key 'ray_address': got '' (str), expected null"),
        ({"ray_address": "auto"}, "config key 'ray_address': got 'auto' (str), but data_workers"),
    ],
)
def test_train_config__bad_data_workers_or_ray_address_is_one_line(changes, message):
    with pytest.raises(TrainConfigError) as caught:
        TrainConfig(**changes)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert TrainConfig(data_workers=2, ray_address="auto").ray_address == "auto"


@pytest.mark.slow  # subprocess run
def test_imitation_and_config__import_no_ray():
    probe = ("import sys, agents.training.config, agents.training.imitation, agents.training.trainer\n"
             "print('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split()[-1] == "False"


@pytest.mark.slow  # Ray
def test_collect_expert_games__same_search_games_with_0_and_2_workers(local_ray):
    # the search over a shipped network, as expert iteration runs it: every worker loads
    # the checkpoint and plays its chunks from the chunk seeds alone
    shipped = Path(__file__).resolve().parents[2] / "models" / "ppo_2p.zip"
    spec = (f"search(samples=2,depth=2,leaf=margin,top_actions=all,confidence_z=2,"
            f"verify_samples=0):ppo:{shipped}")
    arguments = dict(games=3, seed=5, teacher_seed=6, chunk_games=1)
    in_process = collect_expert_games(RULES, spec, **arguments)
    distributed = collect_expert_games(RULES, spec, **arguments, workers=2)
    for expected, got in zip([*in_process.played, *in_process.values],
                             [*distributed.played, *distributed.values], strict=True):
        np.testing.assert_array_equal(got, expected)  # the search's values too (NaN = NaN)
    assert len(in_process.played.actions) > 100


@pytest.mark.slow  # Ray
def test_run_chunks__should_stop_cancels_ray_tasks(local_ray):
    def task(chunk: int, size: int) -> int:
        import time

        time.sleep(0.2)
        return chunk

    finished = []

    def stop_after_one() -> bool:
        finished.append(None)
        return len(finished) > 2

    with pytest.raises(ChunksStopped):
        run_chunks(task, [1] * 8, workers=2, should_stop=stop_after_one)


@pytest.mark.slow
def test_collect_expert_games__same_games_and_values_with_0_1_and_2_workers(local_ray):
    # expert iteration's search games run through the same chunked runner
    # (agents.parallel.run_chunks): the data depends on the seeds alone
    from agents.training.expert import collect_expert_games, teacher_spec

    spec = teacher_spec("search(samples=2,depth=2)", str(ROOT / "models" / "ppo_2p.zip"))
    settings = {"rules": RULES, "spec": spec, "games": 3, "seed": 2, "teacher_seed": 5,
                "chunk_games": 1}
    in_process = collect_expert_games(**settings, workers=0)
    assert len(in_process.played.actions) > 50
    for workers in (1, 2):
        distributed = collect_expert_games(**settings, workers=workers)
        for expected, got in zip((*in_process.played, *in_process.values),
                                 (*distributed.played, *distributed.values), strict=True):
            np.testing.assert_array_equal(got, expected)

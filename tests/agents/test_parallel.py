"""The one task loop (`agents.parallel.run_chunks`): the same results in chunk order with
0, 1 or 2 Ray workers, every chunk reported as it ends, a task's own error as itself,
a stop that cancels; and Ray imported only when asked for."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from agents.parallel import ChunksStopped, TaskPool, run_chunks


def _seeded_draws():
    # made inside a function, so Ray pickles it by value (the workers cannot import tests)
    def seeded_draws(chunk: int) -> list[int]:
        """A chunk whose randomness comes from its index alone."""
        rng = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(chunk,)))
        return rng.integers(0, 1000, size=3).tolist()

    return seeded_draws


seeded_draws = _seeded_draws()


def test_run_chunks__in_process_is_the_plain_loop_and_reports_each_chunk():
    ended = []
    results = run_chunks(seeded_draws, [3, 0, 5], on_result=lambda c, r: ended.append((c, r)))
    assert results == [seeded_draws(3), seeded_draws(0), seeded_draws(5)]
    assert ended == list(zip([3, 0, 5], results, strict=True))


def test_run_chunks__same_results_in_chunk_order_with_0_1_and_2_workers(local_ray):
    chunks = [4, 1, 0, 3, 2]
    in_process = run_chunks(seeded_draws, chunks, workers=0)
    assert in_process == [seeded_draws(chunk) for chunk in chunks]
    for workers in (1, 2, None):
        assert run_chunks(seeded_draws, chunks, workers=workers) == in_process
    assert local_ray.is_initialized()  # a Ray it did not start is left running


def test_run_chunks__results_in_chunk_order_when_the_first_ends_last(local_ray):
    def slow_first(chunk: int) -> int:
        # a local function: pickled by value, so the workers need not import this file
        if chunk == 0:
            import time

            time.sleep(0.5)
        return chunk * 10

    ended = []
    results = run_chunks(slow_first, [0, 1, 2], workers=2,
                         on_result=lambda chunk, result: ended.append(chunk))
    assert results == [0, 10, 20]
    assert sorted(ended) == [0, 1, 2] and ended[-1] == 0  # reported as they end


@pytest.mark.parametrize("workers", [0, 2])
def test_run_chunks__a_task_error_is_raised_as_itself(workers, request):
    if workers:
        request.getfixturevalue("local_ray")

    def fails_on_two(chunk: int) -> int:
        if chunk == 2:
            raise KeyError(f"chunk {chunk} is cursed")
        return chunk

    with pytest.raises(KeyError, match="chunk 2 is cursed"):
        run_chunks(fails_on_two, [0, 1, 2, 3], workers=workers)


@pytest.mark.parametrize("workers", [0, 2])
def test_run_chunks__should_stop_abandons_the_work(workers, request):
    if workers:
        request.getfixturevalue("local_ray")
    asked = []

    def stop_on_third_question() -> bool:
        asked.append(None)
        return len(asked) >= 3

    def sleepy(chunk: int) -> int:
        import time

        time.sleep(0.1)
        return chunk

    with pytest.raises(ChunksStopped):
        run_chunks(sleepy, list(range(8)), workers=workers, should_stop=stop_on_third_question)
    assert len(asked) == 3


@pytest.mark.parametrize("workers", [-1, 1.5, True, "2"])
def test_run_chunks__bad_workers_is_refused(workers):
    with pytest.raises(ValueError, match="workers=.* is invalid: allowed an int >= 0 or None"):
        run_chunks(seeded_draws, [0], workers=workers)


def test_task_pool__keeps_at_most_limit_running_and_cancels_the_rest(local_ray):
    def nap(seconds: float) -> float:
        import time

        time.sleep(seconds)
        return seconds

    pool = TaskPool(local_ray, nap, limit=2)
    pool.submit("short", 0.0)
    assert pool.has_room()
    pool.submit("long", 30.0)
    assert not pool.has_room() and len(pool) == 2
    key, ref = pool.wait_one()
    assert key == "short" and pool.result(ref) == 0.0
    assert pool.cancel_all() == ["long"] and len(pool) == 0


def test_parallel__imports_no_ray():
    probe = ("import sys, agents.parallel, agents.evaluation.distributed\n"
             "print('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split()[-1] == "False"

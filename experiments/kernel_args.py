"""Kernel calling conventions side by side: does a named tuple of state arrays cost speed?

Issue #12 item 6 asked for the kernels to take the state as one named tuple instead of
11-20 positional arrays, if that costs no speed. The candidate is kept as a patch,
``experiments/kernel_args_named.patch``: applied to a temporary copy of
`skyjo_env/core/kernels.py`, it gives every kernel that changes a game a `GameArrays`
named tuple (the entry points called from Python still take the arrays positionally and
wrap them). This script compares, in one process, alternating the variants within every
repeat (medians):

* ``positional``: the engine's kernels, as the engine calls them (``*state.arrays``);
* ``named``: the patched kernels, called the same way;
* ``named boundary``: the patched `step_batch` behind a compiled wrapper that takes the
  `GameArrays` itself from Python (the cost of a named tuple at the Python boundary:
  numba's dispatcher types a tuple subclass in Python code).

Timed: `step_batch` alone (2 players) at batches of 1, 256 and 4096, with the same seeded
random legal actions for every variant (the policy and the mask are not timed), and
`random_legal_play` (the whole loop compiled) at 256 games. Every variant plays the very
same games (checked). Ratios are speeds relative to ``positional`` (above 1: faster).

Usage::

    python experiments/kernel_args.py [--repeats 7] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from types import ModuleType

import numba
import numpy as np

from skyjo_env.core import SkyjoRules, kernels, new_batch, reset

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "skyjo_env" / "core" / "kernels.py"
PATCH = Path(__file__).with_name("kernel_args_named.patch")


class PatchError(ValueError):
    """The named-tuple patch cannot be applied to this checkout's kernels."""


def load_named_kernels() -> ModuleType:
    """This checkout's ``kernels.py`` with `PATCH` applied, imported as its own module.

    Raises:
        PatchError: ``patch`` is missing or the patch no longer applies.
    """
    if shutil.which("patch") is None:
        raise PatchError("the 'patch' program is needed to build the named-tuple kernels")
    workdir = Path(tempfile.mkdtemp(prefix="skyjo_kernel_args_"))
    patched = workdir / "kernels.py"
    applied = subprocess.run(
        ["patch", "--quiet", "--force", "--reject-file=-", "-o", str(patched), str(KERNELS), str(PATCH)],
        capture_output=True,
        text=True,
    )
    if applied.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        raise PatchError(
            f"{PATCH.name} no longer applies to {KERNELS.relative_to(ROOT)}: "
            f"{(applied.stdout + applied.stderr).strip().splitlines()[0]}"
        )
    source = patched.read_text()
    shutil.rmtree(workdir, ignore_errors=True)
    # a stable path named by the content keeps numba's disk cache valid between runs
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"skyjo_kernels_named_{digest}.py"
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def boundary_wrapper(named: ModuleType):
    """A compiled `step_batch` of the ``named`` kernels taking their `GameArrays`."""
    step_batch = named.step_batch

    @numba.njit(nogil=True)
    def step_batch_named(arrays, actions, events):
        a = arrays
        return step_batch(a.grid, a.slot_state, a.draw_pile, a.discard_pile, a.game, a.seat,
                          a.rng, a.final_grid, a.final_slot_state, a.params, a.deck,
                          actions, events)

    return step_batch_named


def step_variants(named: ModuleType) -> dict:
    """Name -> ``(prepare, call)``: ``prepare(state.arrays)`` once per state, then
    ``call(prepared, actions, events)`` runs one `step_batch`."""
    wrapper = boundary_wrapper(named)
    return {
        "positional": (tuple, lambda arrays, actions, events: kernels.step_batch(
            *arrays, actions, events)),
        "named": (tuple, lambda arrays, actions, events: named.step_batch(
            *arrays, actions, events)),
        "named boundary": (lambda arrays: named.GameArrays(*arrays), wrapper),
    }


def fingerprint(state) -> str:
    """A digest of every state array: equal digests, same games."""
    digest = hashlib.sha256()
    for array in state.arrays:
        digest.update(array.tobytes())
    return digest.hexdigest()


def time_steps(variant, start, batch: int, steps: int, seed: int) -> tuple[float, str]:
    """Seconds spent inside the variant's call over ``steps`` seeded random legal steps,
    and the `fingerprint` of the games afterwards.

    Starts from a copy of ``start``; games that end are restarted (untimed), so every
    variant given the same arguments plays the same games.
    """
    prepare, call = variant
    state = start.copy()
    prepared = prepare(state.arrays)
    policy = np.random.default_rng(seed)
    mask = np.empty((batch, state.num_actions), np.bool_)
    events = np.zeros(batch, np.int32)
    spent = 0.0
    for _ in range(steps):
        over = state.game_over
        if over.any():
            reset(state, policy, which=np.flatnonzero(over))
        kernels.legal_masks(state.slot_state, state.game, state.params, mask)
        actions = np.argmax(policy.random(mask.shape) * mask, axis=1)
        began = time.perf_counter()
        bad = call(prepared, actions, events)
        spent += time.perf_counter() - began
        if bad >= 0:
            raise RuntimeError(f"game {bad} refused a legal action")
    return spent, fingerprint(state)


def time_compiled_loop(module: ModuleType, start, calls: int) -> tuple[float, str]:
    """Seconds for ``calls`` calls of ``module.random_legal_play`` (64 decisions each),
    and the `fingerprint` of the games afterwards."""
    state = start.copy()
    streams = np.arange(state.batch_size, dtype=np.uint64) + np.uint64(12345)
    events = np.zeros(state.batch_size, np.int32)
    began = time.perf_counter()
    for _ in range(calls):
        module.random_legal_play(*state.arrays, 64, streams, events)
    return time.perf_counter() - began, fingerprint(state)


def median_times(measures: dict, repeats: int) -> dict[str, float]:
    """Median seconds per variant; the order of the variants rotates every repeat.

    Raises:
        RuntimeError: Two variants ended in different games (they must be equivalent).
    """
    names = list(measures)
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        prints = {}
        for name in names[shift:] + names[:shift]:
            seconds, prints[name] = measures[name]()
            times[name].append(seconds)
        if len(set(prints.values())) != 1:
            raise RuntimeError(f"the variants played different games: {prints}")
    return {name: statistics.median(values) for name, values in times.items()}


def print_row(label: str, medians: dict[str, float], per: int, unit: str) -> None:
    """One line: time per unit of each variant and its speed ratio to ``positional``."""
    base = medians["positional"]
    cells = "  ".join(
        f"{name} {seconds / per * 1e6:8.3f} us/{unit} ({base / seconds:5.3f}x)"
        for name, seconds in medians.items()
    )
    print(f"{label:<23}{cells}", flush=True)


def main(argv: list[str] | None = None) -> None:
    """Measure and print every comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per variant")
    parser.add_argument("--quick", action="store_true", help="fewer steps, 3 repeats")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    repeats = 3 if args.quick else args.repeats
    scale = 0.25 if args.quick else 1.0

    try:
        named = load_named_kernels()
    except PatchError as error:
        sys.exit(f"kernel_args: {error}")
    rules = SkyjoRules(num_players=2)
    variants = step_variants(named)
    warm = new_batch(rules, 2)
    reset(warm, [0, 1])
    for variant in variants.values():  # compile (or load the cache) before any timing
        time_steps(variant, warm, 2, 3, seed=0)
    time_compiled_loop(named, warm, 1)
    time_compiled_loop(kernels, warm, 1)

    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"machine: {os.cpu_count()} cpus, load average {load}")
    print(f"median of {repeats} runs per variant, variants alternating; 2 players")
    for batch, steps in ((1, 4000), (256, 200), (4096, 20)):
        start = new_batch(rules, batch)
        reset(start, list(range(batch)))
        steps = max(5, int(steps * scale))
        measures = {
            name: partial(time_steps, variant, start, batch, steps, seed=batch)
            for name, variant in variants.items()
        }
        print_row(f"step_batch B={batch}", median_times(measures, repeats), steps, "call")
    start = new_batch(rules, 256)
    reset(start, list(range(256)))
    calls = max(2, int(20 * scale))
    loop = {
        "positional": partial(time_compiled_loop, kernels, start, calls),
        "named": partial(time_compiled_loop, named, start, calls),
    }
    print_row("random_legal_play 256", median_times(loop, repeats), calls * 64 * 256, "dec")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average after: {load}")


if __name__ == "__main__":
    main()

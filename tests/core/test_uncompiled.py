"""The kernels run as plain Python (``NUMBA_DISABLE_JIT=1``) give the very same games."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase

REPO = Path(__file__).resolve().parents[2]

# Run both here (compiled) and in a subprocess with the JIT disabled.
SCRIPT = r'''
import numba
import numpy as np

from skyjo_env.core import kernels
from skyjo_env.core.engine import IllegalActionError, legal_action_mask, new_batch, reset, step
from skyjo_env.core.rules import SkyjoRules, load_rules


def snapshot(state):
    games = []
    for b in range(state.batch_size):
        games.append({
            "draw_pile": state.draw_pile_of(b).tolist(),
            "discard_pile": state.discard_pile_of(b).tolist(),
            "grid": state.grid[b].tolist(),
            "slot_state": state.slot_state[b].tolist(),
            "game": state.game[b].tolist(),
            "seat": state.seat[b].tolist(),
            "rng": int(state.rng[b]),
            "final_grid": state.final_grid[b].tolist(),
            "final_slot_state": state.final_slot_state[b].tolist(),
        })
    return games


def play_games(rules, seeds, policy_seed):
    """Play seeded games to the end with a seeded random policy; record everything."""
    state = new_batch(rules, len(seeds))
    reset(state, seeds)
    policy = np.random.default_rng(policy_seed)
    events_seen = []
    while not state.all_over:
        mask = legal_action_mask(state)
        actions = np.argmax(policy.random(mask.shape) * mask, axis=1)
        actions[state.game_over] = -1
        events_seen.append(step(state, actions).tolist())
    return {"events": events_seen, "games": snapshot(state)}


def run():
    tight = SkyjoRules(deck={v: 3 for v in range(-2, 8)}, empty_draw_pile="reshuffle_all")
    online = load_rules("online", num_players=3)
    results = {
        "jit_disabled": bool(numba.config.DISABLE_JIT),
        "compiled": isinstance(kernels.step_batch, numba.core.dispatcher.Dispatcher),
        "official": play_games(SkyjoRules(), [1, 2], policy_seed=3),
        "online": play_games(online, [4], policy_seed=5),
        "tight_deck": play_games(tight, [6, 7], policy_seed=8),
    }
    # the compiled benchmark loop, from the same seeds
    state = new_batch(SkyjoRules(num_players=3), 2)
    reset(state, [9, 10])
    policy_streams = np.array([11, 12], np.uint64)
    events = np.zeros(2, np.int32)
    taken = kernels.random_legal_play(*state.arrays, 300, policy_streams, events)
    results["random_legal_play"] = {
        "taken": int(taken),
        "events": events.tolist(),
        "games": snapshot(state),
    }
    # an illegal action is refused the same way
    state = new_batch(SkyjoRules(), 1)
    reset(state, [13])
    try:
        step(state, np.array([state.num_actions - 1]))
        results["illegal"] = None
    except IllegalActionError as error:
        results["illegal"] = str(error)
    return results
'''


def run_script_here() -> dict:
    namespace: dict = {}
    exec(compile(SCRIPT, "<uncompiled-check>", "exec"), namespace)
    return namespace["run"]()


def run_script_without_jit() -> dict:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    code = SCRIPT + "\nimport json\nprint(json.dumps(run()))\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kernels__plain_python_run_matches_the_compiled_run():
    compiled = run_script_here()
    plain = run_script_without_jit()
    assert compiled.pop("compiled") and not compiled.pop("jit_disabled")
    assert plain.pop("jit_disabled") and not plain.pop("compiled")
    # the runs really played: games ended, rounds were scored, illegal actions refused
    for name in ("official", "online", "tight_deck"):
        for game in compiled[name]["games"]:
            assert game["game"][layout.PHASE] == Phase.GAME_OVER
            assert game["game"][layout.ROUND] >= 1
    assert compiled["random_legal_play"]["taken"] == 600
    assert "illegal action" in compiled["illegal"]
    for key in compiled:
        assert plain[key] == compiled[key], f"{key}: the plain Python run differs"



def test_quiet_overflow__wrapping_is_quiet_without_the_jit_and_free_with_it(monkeypatch):
    import contextlib
    import warnings

    import numpy as np

    from skyjo_env.core import jit

    monkeypatch.setattr(jit, "JIT_DISABLED", True)  # the kernels run on numpy scalars
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with jit.quiet_overflow():
            assert np.uint64(2**64 - 1) + np.uint64(2) == 1  # wraps, no RuntimeWarning
    monkeypatch.setattr(jit, "JIT_DISABLED", False)  # compiled code wraps silently itself
    assert isinstance(jit.quiet_overflow(), contextlib.nullcontext)

"""Seconds per PPO update (MaskablePPO's ``train`` over one rollout): features computed
once per update (`agents.training.ppo_update`, the trainer's) vs once per minibatch and
pass (sb3-contrib's own ``train``).

For each setting, one rollout of real games is collected through `Trainer` (as
``train.py`` builds the model); then the same update, from the same weights, optimizer
state, buffer and shuffling seed, is timed both ways, alternating, ``--repeats`` times.
Prints the medians, their ratio, whether the two updates left the same weights (they
must: bit for bit), and the rollout's own collection time for scale (with the opponent
pool of a fresh run: no snapshots yet, so faster than in a run's later stages).

With ``--threads N`` it times the trainer's update instead on one torch thread vs N (the
``torch_threads`` training key), from the same state, alternating, and says whether the
weights came out equal (torch does not promise it across thread counts). Run it with
nothing else on the cores: threads that share a core with another job slow both.

    python benchmarks/ppo_update.py [--repeats 5] [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time

import numpy as np
import torch

#: name -> TrainConfig keys: the 8-player recipe's finetune_hot (8 passes) and the
#: 2-player recipe's first stage (3 passes)
SETTINGS = {
    "8p finetune_hot": dict(num_players=8, features="grid_feeding_waits", net_arch=[256, 256],
                            batch_size=4096, n_epochs=8),
    "2p grid": dict(num_players=2, features="grid", net_arch=[256, 256], batch_size=4096,
                    n_epochs=3),
}


def _filled_model(settings: dict, run_dir: str):
    """The trainer's model with one rollout of games in its buffer, and the time it took."""
    from stable_baselines3.common.callbacks import CallbackList

    from agents.training.config import TrainConfig
    from agents.training.start import prepare_start
    from agents.training.trainer import Trainer

    config = TrainConfig(**settings, imitation_games=0, shaping=1.0, progress=False,
                         opponent_mix={"greedy": 0.1, "ev": 0.7, "self": 0.2})
    trainer = Trainer(prepare_start(config), run_dir)
    trainer.build_env()
    model = trainer.build_model()
    model.tensorboard_log = None
    model.learn(model.n_steps * model.env.num_envs)  # warm-up: numba, torch allocations
    callback = CallbackList([])
    callback.init_callback(model)
    started = time.perf_counter()
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    return model, time.perf_counter() - started


def _timed_update(model, update, buffer, weights, optimizer) -> tuple[float, dict]:
    """Seconds of ``update(model)`` from the saved state; the weights it leaves."""
    model.rollout_buffer = copy.deepcopy(buffer)
    model.policy.load_state_dict(weights)
    # Adam keeps the loaded state tensors themselves and updates them in place
    model.policy.optimizer.load_state_dict(copy.deepcopy(optimizer))
    # SB3 shuffles the minibatches with numpy's global generator: seed it alike
    np.random.seed(0)  # noqa: NPY002
    started = time.perf_counter()
    update(model)
    seconds = time.perf_counter() - started
    return seconds, {k: v.clone() for k, v in model.policy.state_dict().items()}


def _time_ways(settings: dict, ways: dict, repeats: int):
    """Fill one rollout, then time each way's update from the same saved state, alternating.

    Args:
        settings: TrainConfig keys of the run.
        ways: label -> (update function, or None for the trainer's own; torch threads
            to run it on).
        repeats: Rounds of alternation.

    Returns:
        (model, rollout seconds on one thread, label -> list of seconds,
        label -> the weights its last update left).
    """
    with tempfile.TemporaryDirectory() as run_dir:
        torch.set_num_threads(1)
        model, rollout_seconds = _filled_model(settings, run_dir)
        buffer = copy.deepcopy(model.rollout_buffer)
        weights = copy.deepcopy(model.policy.state_dict())
        optimizer = copy.deepcopy(model.policy.optimizer.state_dict())
        times = {label: [] for label in ways}
        left = {}
        for _ in range(repeats):
            for label, (update, threads) in ways.items():
                torch.set_num_threads(threads)
                seconds, left[label] = _timed_update(model, update or type(model).train,
                                                     buffer, weights, optimizer)
                times[label].append(seconds)
        torch.set_num_threads(1)
    return model, rollout_seconds, times, left


def _same_weights(first: dict, second: dict) -> bool:
    """Whether two state dicts hold equal tensors, bit for bit."""
    return all(torch.equal(first[k], second[k]) for k in first)


def _rollout_line(name: str, model, rollout_seconds: float) -> str:
    """The setting's header: rows, batch, passes and the rollout's collection time."""
    rows = model.n_steps * model.env.num_envs
    return (f"{name}: {rows:,} rows, batch {model.batch_size}, {model.n_epochs} passes; "
            f"collecting the rollout took {rollout_seconds:.2f} s")


def _compare(name: str, settings: dict, repeats: int) -> None:
    """Print the update with features once per update vs once per minibatch and pass."""
    from sb3_contrib import MaskablePPO

    ways = {"once": (None, 1), "per minibatch": (MaskablePPO.train, 1)}
    model, rollout_seconds, times, left = _time_ways(settings, ways, repeats)
    medians = {way: statistics.median(seconds) for way, seconds in times.items()}
    print(_rollout_line(name, model, rollout_seconds))
    for way in ways:
        print(f"  features {way:<14} median {medians[way]:6.3f} s  "
              + ", ".join(f"{t:.3f}" for t in times[way]))
    same = _same_weights(left["once"], left["per minibatch"])
    print(f"  ratio per minibatch / once: {medians['per minibatch'] / medians['once']:.2f}x; "
          f"same weights after the update: {'yes' if same else 'NO'}")


def _compare_threads(name: str, settings: dict, repeats: int, threads: int) -> None:
    """Print the trainer's update time on 1 torch thread vs ``threads``, side by side."""
    ways = {1: (None, 1), threads: (None, threads)}
    model, rollout_seconds, times, left = _time_ways(settings, ways, repeats)
    medians = {count: statistics.median(seconds) for count, seconds in times.items()}
    print(_rollout_line(name, model, rollout_seconds) + " (1 thread)")
    for count in ways:
        print(f"  {count} torch thread{'s' if count > 1 else ' '}  median {medians[count]:6.3f} s  "
              + ", ".join(f"{t:.3f}" for t in times[count]))
    same = _same_weights(left[1], left[threads])
    print(f"  ratio 1 / {threads} threads: {medians[1] / medians[threads]:.2f}x; "
          f"same weights after the update: {'yes' if same else 'no'}")


def main() -> None:
    """Print the side-by-side medians per setting."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 repeats, 2-player only")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="time the trainer's update on 1 torch thread vs N instead")
    args = parser.parse_args()
    if args.threads is not None and args.threads < 2:
        parser.error(f"--threads must be at least 2 (it is compared with 1), got {args.threads}")
    torch.set_num_threads(1)
    settings = {"2p grid": SETTINGS["2p grid"]} if args.quick else SETTINGS
    repeats = 2 if args.quick else args.repeats
    for name, keys in settings.items():
        if args.threads is None:
            _compare(name, keys, repeats)
        else:
            _compare_threads(name, keys, repeats, args.threads)


if __name__ == "__main__":
    main()

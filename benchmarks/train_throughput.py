"""Environment steps per second of PPO training: our default loop vs SB3's defaults.

Both run sb3-contrib MaskablePPO on the same batched `SkyjoVecEnv` (2 players, opponent
pool of the default config) with one torch thread, measured side by side in one process:

* ``skyjo-rl default``: the `agents.training.config.TrainConfig` defaults (the table prints them),
  built through `Trainer` exactly as ``train.py`` builds them (VecMonitor + shaping).
* ``SB3 defaults``: MaskablePPO's own defaults (n_steps 2048, batch 64, 10 epochs, 64x64
  tanh networks) on the same env with 8 games, as a user following the SB3 docs would.

Each figure is whole-loop throughput (rollout collection + gradient updates) over whole
rollouts, the median of ``--repeats`` measurements. Target: >= 10,000 steps/s on 2 cores.

    python benchmarks/train_throughput.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch


def _loop_rate(model, rollouts: int, repeats: int) -> list[float]:
    size = model.n_steps * model.env.num_envs
    model.learn(size)  # warm-up: numba caches, torch allocations
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        model.learn(size * rollouts, reset_num_timesteps=False)
        rates.append(size * rollouts / (time.perf_counter() - started))
    return rates


def main() -> None:
    """Print the side-by-side table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer rollouts per repeat")
    args = parser.parse_args()
    torch.set_num_threads(1)

    from sb3_contrib import MaskablePPO

    from agents.training.config import TrainConfig
    from agents.training.start import prepare_start
    from agents.training.trainer import Trainer

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(prepare_start(TrainConfig(progress=False)), run_dir)
        trainer.build_env()
        ours = trainer.build_model()
        ours.tensorboard_log = None
        ours_rates = _loop_rate(ours, 1 if args.quick else 3, args.repeats)

        config = TrainConfig(n_envs=8, batch_size=64, progress=False, shaping=0.0)
        baseline_trainer = Trainer(prepare_start(config), run_dir)
        baseline_env = baseline_trainer.build_env()
        sb3 = MaskablePPO("MlpPolicy", baseline_env, device="cpu", seed=0, verbose=0)
        sb3_rates = _loop_rate(sb3, 1, max(1, args.repeats - 1) if args.quick else args.repeats)

    rows = [
        ("skyjo-rl default", ours, ours_rates),
        ("SB3 defaults", sb3, sb3_rates),
    ]
    print(f"{'loop':<18}{'envs':>6}{'n_steps':>9}{'batch':>7}{'epochs':>8}"
          f"{'median steps/s':>16}  runs")
    for name, model, rates in rows:
        print(f"{name:<18}{model.env.num_envs:>6}{model.n_steps:>9}{model.batch_size:>7}"
              f"{model.n_epochs:>8}{statistics.median(rates):>16,.0f}  "
              + ", ".join(f"{r:,.0f}" for r in rates))
    ratio = statistics.median(ours_rates) / statistics.median(sb3_rates)
    verdict = "meets" if statistics.median(ours_rates) >= 10_000 else "MISSES"
    print(f"ratio default / SB3 defaults: {ratio:.1f}x; "
          f"default loop {verdict} the 10,000 steps/s target")


if __name__ == "__main__":
    main()

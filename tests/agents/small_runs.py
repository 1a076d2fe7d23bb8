"""Settings of the small training runs that the agent tests train (imported by basename,
like `run_logs`), so that each test names only what its run does differently."""

from __future__ import annotations

#: Rollouts of 16 games x 64 steps (1,024 steps), one epoch of 512-step batches, a 32 x 32
#: network, a 4-game evaluation every rollout, no progress bar.
SMALL_RUN = dict(
    n_envs=16,
    n_steps=64,
    batch_size=512,
    n_epochs=1,
    eval_interval=1024,
    eval_games=4,
    net_arch=[32, 32],
    progress=False,
)

#: `SMALL_RUN` after a short warm start (20 imitation games, one epoch), with every
#: evaluated snapshot admitted to the opponent pool.
WARM_STARTED_RUN = dict(
    SMALL_RUN,
    imitation_games=20,
    imitation_epochs=1,
    snapshot_min_score=0.0,
)

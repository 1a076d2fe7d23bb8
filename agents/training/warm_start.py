"""What a new run's network starts from, before PPO: a saved network (``init_from``,
grown into the config's when smaller) or a clone of the imitation teacher's moves
(`agents.training.imitation`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.finalizers import finalizer_exceptions_handled
from agents.parallel import ChunksStopped
from agents.ppo.checkpoint import CheckpointError, load_policy_weights
from agents.training.config import TrainConfig, TrainConfigError
from agents.training.imitation import (
    DataWorkersError,
    clone_policy,
    collect_chunked_demonstrations,
)
from agents.training.seeds import (
    SEED_IMITATION_DATA,
    SEED_IMITATION_SHUFFLE,
    SEED_IMITATION_TEACHER,
    derived_seed,
)
from skyjo_env.core.rules import SkyjoRules


class WarmStartInterrupted(CheckpointError):
    """SIGTERM or Ctrl-C arrived during the imitation warm start, before any checkpoint.

    A `CheckpointError` because it means exactly that: the run has no checkpoint to resume
    (the command line reports it in one line).
    """

    @classmethod
    def by(cls, signal_name: str) -> WarmStartInterrupted:
        """The error for a stop by ``signal_name`` (``SIGTERM``, ``SIGINT``)."""
        return cls(f"training stopped by {signal_name} during the imitation warm start, before "
                   "its first checkpoint: nothing was saved and there is nothing to resume; "
                   "start the run again without --resume")


def stops_raised_in_finalizers_kept_quiet():
    """A context in which a `WarmStartInterrupted` raised where Python cannot pass it on (the
    stop handler running inside a ``__del__``, e.g. llvmlite's while numba compiles) is
    dropped silently instead of printed as "Exception ignored in ..." with a traceback.

    The stop is not lost: the handler records its signal first, and the warm start checks
    that record between chunks and epochs. Any other such exception goes to the hook that
    was there before (`agents.finalizers.finalizer_exceptions_handled`).
    """
    return finalizer_exceptions_handled(WarmStartInterrupted, lambda exception: True)


def start_from_network(policy, path: str | Path, metadata: dict[str, Any], progress: bool) -> None:
    """Load ``init_from``'s actor and critic into a fresh policy.

    The network was checked when the run started (`agents.training.start.check_warm_start`,
    which read ``metadata``); a smaller one, of an earlier kind of ``features`` or narrower
    hidden layers, is grown with zero weights from what it lacked
    (`agents.ppo.checkpoint.widened_state`).

    Raises:
        CheckpointError: The file changed since the check and no longer fits.
    """
    load_policy_weights(path, policy, widen=True)
    if progress:
        print(f"warm start: the network of {path} ({metadata.get('timesteps', 0):,} steps)")


def _bar(total: int, unit: str, what: str, progress: bool):
    """A tqdm bar over a part of the warm start, disabled (updates do nothing) without
    ``progress``: its games and its cloning epochs take most of a minute before training
    shows anything."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, dynamic_ncols=True, desc=f"warm start: {what}",
                disable=not progress)


def imitation_warm_start(policy, rules: SkyjoRules, config: TrainConfig,
                         stopped_by: Callable[[], str | None]) -> dict[str, float]:
    """Clone ``imitation_teacher``'s moves into a fresh policy (see
    `agents.training.imitation`).

    Deals and teachers are seeded per chunk of games (a teacher per chunk) from the master
    seed: the same data for any ``data_workers``.

    Args:
        policy: The fresh MaskableActorCriticPolicy.
        rules: The rules of the run.
        config: The run's config (``imitation_*``, ``data_workers``, ``ray_address``,
            ``seed``, ``progress``).
        stopped_by: The name of the signal that asked for a stop, or None; checked between
            chunks and epochs (the signal's own exception may have been swallowed).

    Returns:
        The cloning's figures (`clone_policy`) with ``decisions`` and ``seconds``.

    Raises:
        WarmStartInterrupted: A stop was asked for.
        TrainConfigError: Ray is missing, or cannot start or connect (names
            ``data_workers``).
    """
    started = time.perf_counter()
    try:
        with _bar(config.imitation_games, "game", f"{config.imitation_teacher} games",
                  config.progress) as bar:
            observations, masks, actions = collect_chunked_demonstrations(
                rules, config.imitation_teacher, config.imitation_games,
                derived_seed(config.seed, SEED_IMITATION_DATA),
                derived_seed(config.seed, SEED_IMITATION_TEACHER),
                workers=config.data_workers, ray_address=config.ray_address,
                should_stop=lambda: stopped_by() is not None,
                on_chunk_done=bar.update,
            )
    except DataWorkersError as error:  # Ray missing, or it cannot start or connect
        raise TrainConfigError(str(error)) from None  # the message names data_workers
    except ChunksStopped:
        raise WarmStartInterrupted.by(stopped_by()) from None
    with _bar(config.imitation_epochs, "epoch", f"cloning on {len(actions):,} decisions",
              config.progress) as bar:

        def epoch_done() -> None:
            bar.update()
            if stopped_by() is not None:  # its exception was swallowed
                raise WarmStartInterrupted.by(stopped_by())

        stats = clone_policy(
            policy, observations, masks, actions, config.imitation_epochs,
            seed=derived_seed(config.seed, SEED_IMITATION_SHUFFLE),
            on_epoch_done=epoch_done,
        )
    stats["decisions"] = float(len(actions))
    stats["seconds"] = time.perf_counter() - started
    if config.progress:
        print(
            f"warm start: cloned {config.imitation_teacher} on {len(actions):,} decisions "
            f"({stats['accuracy']:.1%} agreement) in {stats['seconds']:.0f} s"
        )
    return stats

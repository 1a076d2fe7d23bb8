"""Does a weight average of a run's last networks play better than its last network?

Averages every floating-point tensor of the policies of checkpoints of one architecture
(the first checkpoint's metadata and non-float tensors are kept) and writes the average
as a checkpoint that loads like any other:

    python experiments/average_weights.py OUT.zip RUN/checkpoints/last.zip RUN/snapshots/snapshot_N.zip ...
    skyjo-compare networks RUN/checkpoints/last.zip OUT.zip --games 4000 --seed S
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import torch

from agents.ppo.checkpoint import CheckpointError, load_policy, read_metadata, save_checkpoint


def averaged_state(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The mean of ``states`` (policy state_dicts with the same keys and shapes) for every
    floating-point tensor; other tensors are taken from the first state.

    Raises:
        ValueError: ``states`` is empty, or their keys or shapes differ.
    """
    if not states:
        raise ValueError("no states to average")
    first = states[0]
    for state in states[1:]:
        if state.keys() != first.keys() or any(state[k].shape != first[k].shape for k in first):
            raise ValueError("the networks differ in their tensors: give one architecture")
    return {key: (torch.stack([state[key] for state in states]).mean(dim=0)
                  if value.is_floating_point() else value)
            for key, value in first.items()}


def average_checkpoints(out: Path, paths: list[Path]) -> Path:
    """Write the weight average of the checkpoints ``paths`` to ``out`` (with the first
    checkpoint's metadata); returns the path written."""
    metadata = read_metadata(paths[0])  # save_checkpoint renews its format and integrity
    # trainable: save_checkpoint saves an optimizer state too
    policy = load_policy(paths[0], metadata, trainable=True)
    states = [policy.state_dict()] + [load_policy(path).state_dict() for path in paths[1:]]
    policy.load_state_dict(averaged_state(states))
    return save_checkpoint(SimpleNamespace(policy=policy), out, metadata)


def main(argv: list[str] | None = None) -> int:
    """Run the script; 0 on success, 2 (one line on stderr) for a bad checkpoint."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the averaged checkpoint to write")
    parser.add_argument("checkpoints", nargs="+", type=Path, help="checkpoints to average")
    args = parser.parse_args(argv)
    try:
        print(average_checkpoints(args.out, args.checkpoints))
    except (CheckpointError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

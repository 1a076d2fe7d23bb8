"""Distil the search's action values (soft targets), not its picks, into a network.

Expert iteration fits the network to the moves the search plays (`agents.training.expert`). On
``ppo_2p`` that gained nothing measurable: the search switches the network's move in about
13% of decisions, and a fit to those picks did not learn them (docs/results.md, "Expert
iteration"). A pick throws away how sure the search was. This script keeps it: every
searched decision of a games file (``skyjo-distill --keep-games``) is labelled with the
search's mean rollout value of each action it tries and the standard error of each
action's paired advantage over the network's own move (`SearchAgent.action_values`); the
network is then fitted by cross-entropy to ``prior * exp(advantage / temperature)``
(`agents.training.expert.soft_search_targets`, optionally with noisy advantages shrunk), and
each fitted network plays ``ev`` on the same deals as the network it came from.

Printed per fit: the share of labelled decisions whose target's most probable action is
not the network's own move ("target moves"), how often the fitted network's greedy move
is the target's most probable action ("agree after"; before the fit it is 100% minus
"target moves"), and the win rate against ``ev`` with its 95% interval, and its difference
from the source network's on the same deals with the interval of that paired difference
(over deal groups: the same deals cancel much of the luck).

Usage::

    python experiments/soft_distill.py --games run.games.npz [more.games.npz ...] \\
        [--checkpoint models/ppo_2p.zip] [--parts 2] \\
        [--fit TEMPERATURE SHRINK EPOCHS LR ...] [--eval-games 2000] [--eval-seed 11] \\
        [--capacity-check 8000]

Games searched by this version keep the values the search measured as it played
(`agents.training.expert.SearchGames`); those are used as they are. Older files, or any with
``--relabel``, are labelled here with ``--search`` over ``--checkpoint``: the slow part
(about 16 ms per decision on one core; ``--parts`` processes share the rows), saved as
``--labels`` (default ``<games>.labels.npz``) and reused by a later run with the same games,
checkpoint and search. Several ``--games`` files are pooled into one fit (the targets use
only differences of the values within a decision and the fitted network's own
probabilities, so games searched over another network can be pooled).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from agents.evaluation.compare import interval_text, network_deal_shares, network_rules

#: Decisions labelled per `SearchAgent.action_values` call.
_CHUNK = 256
#: Fits run when no --fit is given: (temperature, shrink, epochs, learning rate).
DEFAULT_FITS = ((0.03, False, 2, 1e-4), (0.03, True, 2, 1e-4), (0.01, True, 4, 3e-4))


def read_games(games: str | Path, rules):
    """The decisions of a kept games file and the search values recorded with them (None
    in older files), checked against ``rules`` first
    (`agents.training.expert.load_recorded_games`)."""
    from agents.training.expert import load_recorded_games
    from skyjo_env.core import num_actions
    from skyjo_env.encoding import ObservationLayout

    played, _, values = load_recorded_games(games, ObservationLayout(rules).size,
                                            num_actions(rules.num_slots))
    return played, values


def label_part(checkpoint: str, search: str, games: str, part: int, parts: int) -> dict:
    """Label every ``parts``-th searchable decision of ``games`` from ``part`` on.

    Returns:
        ``{"rows": int64 (R,), "means": float32 (R, A), "errors": float32 (R, A),
        "base": int64 (R,)}`` (`agents.search.ActionValues` of those decisions).
    """
    import torch

    from agents.registry import make_agent

    torch.set_num_threads(1)
    rules = network_rules(checkpoint)
    agent = make_agent(f"{search}:ppo:{checkpoint}", rules, seed=100 + part)
    played, _ = read_games(games, rules)
    observations, masks = played.observations, played.masks
    rows = np.flatnonzero(agent.searchable_rows(observations, masks))[part::parts]
    means, errors, base = [], [], []
    started = time.perf_counter()
    for first in range(0, rows.size, _CHUNK):
        chunk = rows[first : first + _CHUNK]
        values = agent.action_values(observations[chunk], masks[chunk])
        means.append(values.means.astype(np.float32))
        errors.append(values.errors.astype(np.float32))
        base.append(values.base_actions)
        if (first // _CHUNK) % 40 == 0:
            print(f"  part {part}: {first + chunk.size:,}/{rows.size:,} decisions, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    return {"rows": rows, "means": np.concatenate(means), "errors": np.concatenate(errors),
            "base": np.concatenate(base)}


def labels(args: argparse.Namespace, games: Path, recorded, saved_labels: Path) -> dict:
    """The labels of the file ``games``: ``recorded``, the values recorded in it (unless
    None or ``args.relabel``), else read from ``saved_labels`` when that was made from the
    same inputs, else computed on ``args.parts`` processes and saved there."""
    if recorded is not None and not args.relabel:
        rows = np.flatnonzero(recorded.base_actions >= 0)
        print(f"labels: the search values recorded in {games} ({rows.size:,} decisions)")
        return {"rows": rows, "means": recorded.means[rows], "errors": recorded.errors[rows],
                "base": recorded.base_actions[rows]}
    provenance = json.dumps({"games": str(games), "checkpoint": str(args.checkpoint),
                             "search": args.search, "parts": args.parts})
    if saved_labels.is_file():
        with np.load(saved_labels) as saved:
            if str(saved["provenance"]) == provenance:
                print(f"labels: read {saved_labels}")
                return {name: saved[name] for name in ("rows", "means", "errors", "base")}
    print(f"labels: {args.search} over {args.checkpoint} on {games}, {args.parts} "
          "processes", flush=True)
    started = time.perf_counter()
    jobs = [(str(args.checkpoint), args.search, str(games), part, args.parts)
            for part in range(args.parts)]
    with multiprocessing.get_context("spawn").Pool(args.parts) as pool:
        results = pool.starmap(label_part, jobs)
    merged = {name: np.concatenate([r[name] for r in results]) for name in results[0]}
    np.savez(saved_labels, provenance=np.array(provenance), **merged)
    print(f"labels: {merged['rows'].size:,} decisions in {time.perf_counter() - started:.0f} s,"
          f" saved to {saved_labels}", flush=True)
    return merged


def pooled_labels(args: argparse.Namespace) -> tuple[dict, tuple[np.ndarray, np.ndarray]]:
    """The labels of every ``--games`` file (`labels`) and their decisions
    (`labelled_decisions`), file after file in one pool."""
    rules = network_rules(args.checkpoint)
    parts, decisions = [], []
    for games in args.games:
        played, recorded = read_games(games, rules)
        saved_labels = args.labels or games.with_suffix(".labels.npz")
        parts.append(labels(args, games, recorded, saved_labels))
        decisions.append(labelled_decisions(played, parts[-1]))
    pooled = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    return pooled, tuple(np.concatenate(arrays) for arrays in zip(*decisions, strict=True))


def labelled_decisions(played, labelled: dict) -> tuple[np.ndarray, np.ndarray]:
    """Observations float32 (R, O) and masks bool (R, A) of the labelled decisions of
    ``played`` (`read_games`), in the labels' order."""
    return played.observations[labelled["rows"]], played.masks[labelled["rows"]]


def fit(args: argparse.Namespace, labelled: dict, decisions: tuple, setting: tuple,
        out: Path) -> dict:
    """Fit a copy of the checkpoint to the soft targets of ``setting`` on ``decisions``
    (`labelled_decisions`) and save it.

    Returns:
        ``{"changed", "agree_after"}``: the share of decisions whose target's argmax is
        not the network's move (before the fit), and the share where the fitted network's
        greedy move is the target's argmax.
    """
    import torch

    from agents.ppo.checkpoint import load_policy, read_metadata, save_checkpoint
    from agents.search import ActionValues
    from agents.training.expert import EXPERT_BATCH_SIZE, policy_soft_targets
    from agents.training.imitation import action_probabilities, clone_policy

    temperature, shrink, epochs, learning_rate = setting
    metadata = read_metadata(args.checkpoint)
    policy = load_policy(args.checkpoint, metadata, trainable=True)
    observations, masks = decisions
    evidence = ActionValues(labelled["means"], labelled["errors"], labelled["base"])
    targets, prior = policy_soft_targets(policy, observations, masks, evidence, temperature,
                                         shrink)
    wanted = targets.argmax(axis=1)
    clone_policy(policy, observations, masks, wanted, epochs, batch_size=EXPERT_BATCH_SIZE,
                 learning_rate=learning_rate, seed=0, target_probabilities=targets)
    after = action_probabilities(policy, torch.as_tensor(observations),
                                 torch.as_tensor(masks)).numpy()
    record = {"soft_targets": {"temperature": temperature, "shrink": shrink, "epochs": epochs,
                               "learning_rate": learning_rate,
                               "games": [str(games) for games in args.games],
                               "search": args.search, "source": str(args.checkpoint)}}
    save_checkpoint(SimpleNamespace(policy=policy), out,
                    {**metadata, "distilled": [*metadata.get("distilled", []), record]})
    own = prior.argmax(axis=1)
    return {"changed": float(np.mean(wanted != own)),
            "agree_after": float(np.mean(after.argmax(axis=1) == wanted))}


def capacity_check(args: argparse.Namespace, labelled: dict, decisions: tuple, rows: int,
                   epochs: int = 60) -> dict:
    """Can the network even memorise the search's best-mean actions? Fits a copy of the
    checkpoint to the best mean action of the first ``rows`` labelled decisions (hard
    labels, lr 1e-3, ``epochs`` passes) and returns ``{"differs", "accuracy"}``: the share
    of them where that action is not the network's own move, and the fit's training
    accuracy in its last pass. High accuracy with no gain in play means the labels are
    noise to the network, not beyond its capacity."""
    from agents.ppo.checkpoint import load_policy
    from agents.training.imitation import clone_policy

    policy = load_policy(args.checkpoint, trainable=True)
    observations, masks = (array[:rows] for array in decisions)
    best = np.nanargmax(labelled["means"][:rows], axis=1)
    stats = clone_policy(policy, observations, masks, best, epochs, batch_size=256,
                         learning_rate=1e-3, seed=0)
    return {"differs": float(np.mean(best != labelled["base"][:rows])),
            "accuracy": stats["accuracy"]}


def main() -> int:
    """Label, fit each setting, and compare the fitted networks against ``ev``; returns the
    exit code (2: a one-line error for a bad games file, checkpoint or fit setting)."""
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=Path, required=True, nargs="+",
                        help="skyjo-distill --keep-games files (several: one pooled fit)")
    parser.add_argument("--checkpoint", type=Path, default=Path("models/ppo_2p.zip"))
    parser.add_argument("--search", default="search(samples=64,leaf=critic,depth=12,"
                        "top_actions=4)", help="search spec without its base (labelling)")
    parser.add_argument("--relabel", action="store_true",
                        help="label with --search even if the file holds recorded values")
    parser.add_argument("--parts", type=int, default=2, help="labelling processes")
    parser.add_argument("--labels", type=Path, help="default: <games>.labels.npz (with "
                        "one --games file)")
    parser.add_argument("--fit", nargs=4, action="append", metavar=("TEMPERATURE", "SHRINK",
                        "EPOCHS", "LR"), help="a fit (SHRINK 0 or 1); repeat for several")
    parser.add_argument("--out-dir", type=Path, default=Path("runs/soft_distill"))
    parser.add_argument("--eval-games", type=int, default=2000)
    parser.add_argument("--eval-seed", type=int, default=11)
    parser.add_argument("--capacity-check", type=int, default=0, metavar="N",
                        help="also fit a copy to the best-mean actions of N decisions for "
                        "60 epochs and print how well it memorises them (0: skip)")
    args = parser.parse_args()
    if args.labels is not None and len(args.games) > 1:
        parser.error("--labels names one file: give it with one --games file")
    torch.set_num_threads(1)
    try:
        run(args)
    except ValueError as error:  # also GamesFileError and CheckpointError: bad input files
        print(f"{parser.prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    return 0


def run(args: argparse.Namespace) -> None:
    """Everything after the argument parsing of `main`: label, fit, compare, print."""
    settings = DEFAULT_FITS if not args.fit else tuple(
        (float(t), bool(int(s)), int(e), float(lr)) for t, s, e, lr in args.fit)
    labelled, decisions = pooled_labels(args)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    source = network_deal_shares(args.checkpoint, args.eval_games, args.eval_seed)
    print(f"\n{args.eval_games} games against ev, seed {args.eval_seed}; "
          f"{labelled['rows'].size:,} labelled decisions")
    print(f"{'fit':<30} {'target moves':>12} {'agree after':>11}  {'win rate, 95% CI':<20} "
          "minus the source's on the same deals")
    print(f"{'source ' + args.checkpoint.name:<30} {'':>12} {'':>11}  "
          f"{interval_text(source):<20}", flush=True)
    for setting in settings:
        temperature, shrink, epochs, learning_rate = setting
        name = f"t{temperature:g}_{'shrink' if shrink else 'raw'}_e{epochs}_lr{learning_rate:g}"
        out = args.out_dir / f"{name}.zip"
        stats = fit(args, labelled, decisions, setting, out)
        fitted = network_deal_shares(out, args.eval_games, args.eval_seed)
        print(f"{name:<30} {stats['changed']:>12.1%} {stats['agree_after']:>11.1%}  "
              f"{interval_text(fitted):<20} {interval_text(fitted - source, signed=True)}",
              flush=True)
    if args.capacity_check:
        check = capacity_check(args, labelled, decisions, args.capacity_check)
        print(f"\ncapacity check: on {args.capacity_check:,} decisions the best mean is not the "
              f"network's move in {check['differs']:.1%}; fitted to them for 60 epochs, the "
              f"network plays it in {check['accuracy']:.1%} (training accuracy)")


if __name__ == "__main__":
    sys.exit(main())

"""Editing checkpoints in tests (imported by basename, like `hidden_cards`): replace, add or drop members, and (``resign``) recompute
the checksums as a careful editor would, so that what is tested is the schema, not the
checksum."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

from agents.ppo.checkpoint import META_MEMBER, metadata_digest


def members_of(path: Path) -> dict[str, bytes]:
    """Every member of the zip at ``path``, by name, in order."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def resigned(members: dict[str, bytes]) -> dict[str, bytes]:
    """``members`` with the metadata's ``integrity`` record (when it has one) recomputed
    over them; metadata that is not a JSON object is left as it is."""
    try:
        meta = json.loads(members[META_MEMBER])
    except (KeyError, ValueError):
        return members
    if not isinstance(meta, dict) or not isinstance(meta.get("integrity"), dict):
        return members
    record = meta["integrity"]
    record["members"] = {name: hashlib.sha256(content).hexdigest()
                         for name, content in members.items() if name != META_MEMBER}
    record["metadata"] = metadata_digest(meta)
    return {**members, META_MEMBER: json.dumps(meta, indent=2, sort_keys=True).encode()}


def rewrite(path: Path, replace: dict[str, bytes], drop: tuple[str, ...] = (),
            resign: bool = True) -> None:
    """Rewrite the zip at ``path`` with members replaced, added or dropped (recomputing
    its checksums with ``resign``)."""
    members = {name: content for name, content in members_of(path).items() if name not in drop}
    members.update(replace)
    if resign:
        members = resigned(members)
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)


def edit_metadata(path: Path, resign: bool = True, **changes) -> None:
    """Update fields of a checkpoint's metadata (recomputing its checksums with
    ``resign``)."""
    meta = json.loads(members_of(path)[META_MEMBER])
    meta.update(changes)
    rewrite(path, {META_MEMBER: json.dumps(meta).encode()}, resign=resign)


# ------------------------------------------------------------------ a tiny run to resume

#: A run of one rollout (4 games x 32 steps) with a checkpoint and an evaluation at its end.
TINY_RUN = dict(total_timesteps=128, n_envs=4, n_steps=32, batch_size=64, n_epochs=1,
                eval_interval=0, eval_games=2, checkpoint_interval=128, net_arch=[8],
                imitation_games=0, progress=False, eval_opponents=["random"])


def train_tiny_run(run_dir: Path) -> Path:
    """Train `TINY_RUN` into ``run_dir`` (a few seconds); returns ``run_dir``."""
    from agents.training.config import TrainConfig
    from agents.training.trainer import train

    train(TrainConfig(**TINY_RUN), run_dir)
    return run_dir


def resume_checked(run_dir: Path, **changes) -> int:
    """What ``train.py --resume`` does up to training: check the start, build the env,
    restore the run (`restore_run`) of `TINY_RUN` (extended to 256 steps, with
    ``changes``); returns the steps restored."""
    from agents.training.config import TrainConfig
    from agents.training.run_state import restore_run
    from agents.training.start import prepare_start
    from agents.training.trainer import Trainer

    config = TrainConfig(**{**TINY_RUN, "total_timesteps": 256, **changes})
    trainer = Trainer(prepare_start(config, resume=True), run_dir)
    trainer.build_env()
    return restore_run(trainer)


def edit_state(path: Path, change) -> None:
    """Replace a checkpoint's training state JSON by ``change(state)`` (re-signed)."""
    from agents.training.run_state import TRAINING_STATE_JSON

    state = json.loads(members_of(path)[TRAINING_STATE_JSON])
    rewrite(path, {TRAINING_STATE_JSON: json.dumps(change(state)).encode()})


def edit_arrays(path: Path, change) -> None:
    """Replace a checkpoint's training state arrays by ``change(arrays)`` (re-signed)."""
    import io

    import numpy as np

    from agents.training.run_state import TRAINING_STATE_ARRAYS

    with np.load(io.BytesIO(members_of(path)[TRAINING_STATE_ARRAYS])) as data:
        arrays = {name: data[name] for name in data.files}
    buffer = io.BytesIO()
    np.savez(buffer, **change(arrays))
    rewrite(path, {TRAINING_STATE_ARRAYS: buffer.getvalue()})


def file_hashes(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}

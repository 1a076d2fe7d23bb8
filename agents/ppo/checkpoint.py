"""PPO checkpoints: saving with metadata, reading and checking the metadata, loading.

A checkpoint is the zip that sb3-contrib's ``MaskablePPO.save`` writes, plus one member,
``skyjo_meta.json``, recording what the network was trained for::

    {"format": "skyjo-rl-ppo/1", "rules": {...}, "observation_version": 1,
     "observation_size": 108, "num_actions": 27, "timesteps": 1234567, ...}

`save_checkpoint` writes it atomically (a temporary file, then a rename), so a killed
process never leaves a half-written checkpoint. `load_ppo_agent` refuses a missing or
corrupt file, a file that is not a skyjo-rl checkpoint, and a checkpoint trained for other
rules or another observation layout, each with a `CheckpointError` that names the problem.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from agents.atomic import atomic_path
from skyjo_env.core.actions import num_actions
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import OBSERVATION_VERSION, ObservationLayout

CHECKPOINT_FORMAT = "skyjo-rl-ppo/1"


META_MEMBER = "skyjo_meta.json"


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, or made for other rules or observations."""


def checkpoint_metadata(rules: SkyjoRules, timesteps: int, **extra: Any) -> dict[str, Any]:
    """The metadata recorded in a checkpoint trained under ``rules``."""
    return {
        "format": CHECKPOINT_FORMAT,
        "rules": rules.to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "observation_size": ObservationLayout(rules).size,
        "num_actions": num_actions(rules.num_slots),
        "timesteps": int(timesteps),
        **extra,
    }


def save_checkpoint(model, path: str | Path, metadata: dict[str, Any]) -> Path:
    """Save ``model`` (a MaskablePPO) with ``metadata`` to ``path`` atomically.

    Returns:
        The path written (``.zip`` appended when missing).
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_name(path.name + ".zip")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, suffix=".zip") as temporary:
        model.save(temporary)
        with zipfile.ZipFile(temporary, "a") as archive:
            archive.writestr(META_MEMBER, json.dumps(metadata, indent=2, sort_keys=True))
    return path


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata of a checkpoint.

    Raises:
        CheckpointError: The file is missing, not a zip, unreadable, or has no valid
            skyjo-rl metadata.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()  # reads every member: catches truncation, bad CRCs
            if damaged is not None:
                raise CheckpointError(f"checkpoint {str(path)!r} is corrupt: bad data in {damaged}")
            if META_MEMBER not in archive.namelist():
                # also what a truncated checkpoint looks like: zipfile then finds the
                # directory of a zip nested inside it
                raise CheckpointError(
                    f"checkpoint {str(path)!r} is corrupt or not a skyjo-rl checkpoint "
                    f"(no {META_MEMBER} inside)"
                )
            metadata = json.loads(archive.read(META_MEMBER))
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt: {error}") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"checkpoint {str(path)!r} has corrupt metadata: {error}") from error
    if not isinstance(metadata, dict) or metadata.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"checkpoint {str(path)!r} has format {metadata.get('format')!r}, "
            f"expected {CHECKPOINT_FORMAT!r}"
            if isinstance(metadata, dict)
            else f"checkpoint {str(path)!r} has corrupt metadata"
        )
    return metadata


def check_compatible(metadata: dict[str, Any], rules: SkyjoRules, path: str | Path) -> None:
    """Raise `CheckpointError` unless the checkpoint was trained for ``rules`` and this
    observation layout."""
    if metadata.get("observation_version") != OBSERVATION_VERSION:
        raise CheckpointError(
            f"checkpoint {str(path)!r} uses observation layout version "
            f"{metadata.get('observation_version')!r}; this skyjo-rl encodes version "
            f"{OBSERVATION_VERSION}"
        )
    try:
        trained = SkyjoRules.from_dict(metadata["rules"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"checkpoint {str(path)!r} has unreadable rules: {error}") from error
    if trained != rules:
        wanted, got = rules.to_dict(), trained.to_dict()
        differing = [f"{k}={got[k]!r} (asked {wanted[k]!r})" for k in wanted if wanted[k] != got[k]]
        raise CheckpointError(
            f"checkpoint {str(path)!r} was trained for other rules: " + ", ".join(differing)
        )
    if metadata.get("observation_size") != ObservationLayout(rules).size:
        raise CheckpointError(
            f"checkpoint {str(path)!r} expects {metadata.get('observation_size')} observation "
            f"features; these rules give {ObservationLayout(rules).size}"
        )


def load_model(path: str | Path, env=None):
    """Load the MaskablePPO model of a checkpoint on the CPU (metadata not checked),
    attached to ``env`` when given (to continue training it)."""
    from sb3_contrib import MaskablePPO

    try:
        return MaskablePPO.load(str(path), env=env, device="cpu")
    except Exception as error:  # SB3 raises many kinds on a damaged archive
        raise CheckpointError(
            f"checkpoint {str(path)!r} is corrupt: {type(error).__name__}: {error}"
        ) from error

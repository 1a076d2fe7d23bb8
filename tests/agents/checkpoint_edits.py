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

"""Resumable sharded tournaments: each finished chunk kept on disk (``evaluate.py --resume DIR``).

A sharded tournament (`agents.evaluation.distributed`) plays fixed chunks of deal groups,
each seeded by its index alone, so a chunk played in one run is exactly the chunk another
run would play. `ChunkStore` keeps every finished chunk's `GameRecords` in a directory;
a run over the same directory loads those and plays only the missing chunks, and its
report equals the report of a run never stopped (timing aside: ``elapsed_s`` adds up the
wall time of all the runs).

The directory holds ``tournament.json`` (what the tournament is: specs, rules, games,
seed, chunk size, a SHA-256 of every checkpoint a spec loads, and the wall time spent so
far) and ``chunk_00007.npz`` per finished chunk. Every file is written atomically
(`agents.atomic.atomic_path`), so a kill leaves whole files only. A directory made for
another tournament, a checkpoint changed since, or a damaged chunk file is a
`ResumeError` naming the difference, never a silently mixed report. The project's own
code is not part of the identity (an edit of a docstring would forbid every resume): a
run is resumed with the checkout that started it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from agents.atomic import atomic_path
from agents.evaluation.games import GameRecords, games_per_deal
from agents.registry import checkpoint_path
from skyjo_env.core.rules import SkyjoRules

#: The file that says which tournament a resume directory belongs to.
TOURNAMENT_FILE = "tournament.json"

#: Version of the directory's layout.
FORMAT = 1


class ResumeError(ValueError):
    """A resume directory that belongs to another tournament, or a damaged one."""


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tournament_identity(
    specs: Sequence[str], rules: SkyjoRules, games: int, seed: int, chunk_deals: int,
    seating: str = "cyclic",
) -> dict[str, Any]:
    """What makes two runs the same tournament, as JSON-ready data: the specs, rules,
    games, seed, chunk size, seating, and the SHA-256 of every checkpoint a spec loads (a
    network retrained at the same path is another agent)."""
    checkpoints = {}
    for spec in specs:
        path = checkpoint_path(spec, rules.num_players)
        if path is not None:
            checkpoints[path] = file_digest(path)
    identity = {
        "format": FORMAT,
        "specs": list(specs),
        "rules": rules.to_dict(),
        "games": int(games),
        "seed": int(seed),
        "chunk_deals": int(chunk_deals),
        "checkpoints": checkpoints,
        "seating": seating,
    }
    return json.loads(json.dumps(identity))  # the form it takes once read back


class ChunkStore:
    """The finished chunks of one sharded tournament, in ``directory``.

    Creating it makes the directory (its parent must exist) and records the tournament's
    identity there, or checks the identity already recorded.

    Args:
        directory: Where the chunks are kept.
        identity: `tournament_identity` of the tournament being played.

    Raises:
        ResumeError: The directory holds another tournament (the message names the first
            difference), its ``tournament.json`` is unreadable, or ``directory`` is a file
            or its parent is missing.
    """

    def __init__(self, directory: str | Path, identity: dict[str, Any]):
        self.directory = Path(directory)
        self.identity = identity
        if self.directory.exists() and not self.directory.is_dir():
            raise ResumeError(f"--resume {str(self.directory)!r} is a file, not a directory")
        if not self.directory.parent.is_dir():
            raise ResumeError(
                f"--resume: directory {str(self.directory.parent)!r} does not exist"
            )
        self.directory.mkdir(exist_ok=True)
        self._file = self.directory / TOURNAMENT_FILE
        if self._file.exists():
            recorded = self._read_tournament()
            _check_same(recorded.get("identity"), identity, self._file)
            self.elapsed_s = float(recorded.get("elapsed_s", 0.0))
        else:
            self.elapsed_s = 0.0
            self._write_tournament()

    def _read_tournament(self) -> dict[str, Any]:
        try:
            data = json.loads(self._file.read_text())
        except (OSError, ValueError) as error:
            raise ResumeError(f"{self._file}: unreadable ({error}); delete the directory "
                              "to start the tournament afresh") from error
        if not isinstance(data, dict):
            raise ResumeError(f"{self._file}: not a tournament record")
        return data

    def _write_tournament(self) -> None:
        data = {"identity": self.identity, "elapsed_s": self.elapsed_s}
        with atomic_path(self._file) as temporary:
            temporary.write_text(json.dumps(data, indent=1) + "\n")

    def chunk_file(self, chunk: int) -> Path:
        """Where chunk ``chunk`` is kept."""
        return self.directory / f"chunk_{chunk:05d}.npz"

    def has_all(self, chunks: int) -> bool:
        """Whether chunks ``0 .. chunks - 1`` are all kept (files present, not yet read)."""
        return all(self.chunk_file(chunk).exists() for chunk in range(chunks))

    def load(
        self, chunk: int, deals: range, num_players: int, seating: str = "cyclic"
    ) -> tuple[GameRecords, list[str]] | None:
        """The records and agent names of a finished chunk, or None if it is not kept.

        Args:
            chunk: The chunk's index.
            deals: Its deal groups (checked against the file).
            num_players: Agents per game.
            seating: The tournament's seating (`agents.evaluation.games.seat_arrangements`).

        Raises:
            ResumeError: The file is damaged or holds other games.
        """
        path = self.chunk_file(chunk)
        if not path.exists():
            return None
        expected = GameRecords.empty(len(deals) * games_per_deal(num_players, seating),
                                     num_players, deals.start, seating)
        if not zipfile.is_zipfile(path):
            raise ResumeError(f"{path}: not a chunk file (no .npz archive); delete it to "
                              f"play chunk {chunk} again")
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {field.name: data[field.name] for field in fields(GameRecords)}
                names = [str(name) for name in data["names"]]
        except (OSError, KeyError, ValueError) as error:
            raise ResumeError(f"{path}: unreadable ({error}); delete it to play chunk "
                              f"{chunk} again") from error
        for name, array in arrays.items():
            reference = getattr(expected, name)
            if array.shape != reference.shape or array.dtype != reference.dtype:
                raise ResumeError(f"{path}: {name} has shape {array.shape} and dtype "
                                  f"{array.dtype}, expected {reference.shape} {reference.dtype}; "
                                  f"delete it to play chunk {chunk} again")
        for name in ("deal", "rotation", "seat"):
            if not np.array_equal(arrays[name], getattr(expected, name)):
                raise ResumeError(f"{path}: holds other games than chunk {chunk} (deal groups "
                                  f"{deals.start}..{deals.stop - 1}); delete it to play it again")
        if len(names) != num_players:
            raise ResumeError(f"{path}: {len(names)} agent names for {num_players} agents")
        return GameRecords(**arrays), names

    def save(self, chunk: int, records: GameRecords, names: Sequence[str],
             elapsed_s: float) -> None:
        """Keep a finished chunk, and the wall time spent on the tournament so far.

        Args:
            chunk: The chunk's index.
            records: Its games.
            names: The agents' display names.
            elapsed_s: Wall time of all runs so far, this chunk included.
        """
        arrays = {field.name: getattr(records, field.name) for field in fields(GameRecords)}
        with atomic_path(self.chunk_file(chunk), suffix=".npz") as temporary:
            with open(temporary, "wb") as handle:
                np.savez(handle, names=np.array(list(names)), **arrays)
        self.elapsed_s = float(elapsed_s)
        self._write_tournament()


#: Identity fields added after the first directories were written, with the value those
#: directories played (so they still resume).
_RECORDED_BEFORE = {"seating": "cyclic"}


def _check_same(recorded: Any, identity: dict[str, Any], where: Path) -> None:
    """Raise `ResumeError` naming the first field where ``recorded`` differs."""
    if not isinstance(recorded, dict):
        raise ResumeError(f"{where}: not a tournament record")
    recorded = {**_RECORDED_BEFORE, **recorded}
    for key, value in identity.items():
        if recorded.get(key) != value:
            if key == "checkpoints":
                changed = sorted(path for path in set(value) | set(recorded.get(key) or {})
                                 if value.get(path) != (recorded.get(key) or {}).get(path))
                raise ResumeError(
                    f"{where.parent}: checkpoint {changed[0]!r} changed since the chunks "
                    "there were played; use another --resume directory"
                )
            raise ResumeError(
                f"{where.parent} holds another tournament: {key} was "
                f"{recorded.get(key)!r}, this run has {value!r}; use another --resume "
                "directory or the same arguments"
            )


__all__ = ["FORMAT", "TOURNAMENT_FILE", "ChunkStore", "ResumeError", "file_digest",
           "tournament_identity"]

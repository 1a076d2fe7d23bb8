"""Resumable sharded tournaments: each finished chunk kept on disk (``evaluate.py --resume DIR``).

A sharded tournament (`agents.evaluation.distributed`) plays fixed chunks of deal groups,
each seeded by its index alone, so a chunk played in one run is exactly the chunk another
run would play. `ChunkStore` keeps every finished chunk's `GameRecords` in a directory;
a run over the same directory loads those and plays only the missing chunks, and its
report equals the report of a run never stopped (timing aside: ``elapsed_s`` adds up the
wall time of all the runs).

The directory holds ``tournament.json`` (what the tournament is: specs, rules, games,
seed, chunk size, a SHA-256 of every checkpoint a spec loads, the wall time spent so far,
and a SHA-256 of all that) and per finished chunk ``chunk_00007.npz`` with its SHA-256 in
``chunk_00007.sha256`` (written after the chunk: a chunk without it was cut off by a stop
between the two writes and is played again). Every file is written atomically
(`agents.atomic.atomic_path`), so a kill leaves whole files only. A directory made for
another tournament, a directory of other files, a checkpoint changed since, or a damaged
or edited file (a flipped byte, a wrong type, a changed value) is a one-line
`ResumeError` naming the file and what is wrong, never a silently mixed report, and
nothing on disk is changed or deleted by it. The checksums guard against damage, not
against someone who rewrites them.

Directories written before the checksums (``format`` 1 in ``tournament.json``) still
resume, with a note (`ChunkStore.notes`): their files are read without a checksum, but
still checked for their shapes, types and value ranges. The project's own code is not
part of the identity (an edit of a docstring would forbid every resume): a run is resumed
with the checkout that started it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from agents.atomic import atomic_path
from agents.evaluation.games import (
    GameRecords,
    check_seating,
    chunk_ranges,
    deal_groups,
    games_per_deal,
)
from agents.registry import checkpoint_paths
from skyjo_env.core.errors import one_line, shorten
from skyjo_env.core.rules import MAX_ROUNDS, SkyjoRules

#: The file that says which tournament a resume directory belongs to.
TOURNAMENT_FILE = "tournament.json"

#: Version of the directory's layout: 2 adds the checksums of ``tournament.json`` and of
#: every chunk; 1 (no checksums) is still read.
FORMAT = 2

#: Layout versions this code reads.
READABLE_FORMATS = (1, 2)

#: Largest ``tournament.json`` read (its identity takes a few kB).
MAX_TOURNAMENT_BYTES = 1 << 20

#: Bytes a chunk file may hold beyond its arrays' data (the archive's and arrays' headers).
_CHUNK_OVERHEAD_BYTES = 1 << 16

#: Largest absolute total score or count a chunk may record (the engine keeps totals in
#: int32; counts are far below).
_MAX_RECORDED = 2**31 - 1

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ResumeError(ValueError):
    """A resume directory that belongs to another tournament, or a damaged one."""


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_digest(record: dict[str, Any]) -> str:
    """SHA-256 of a JSON-ready record in one canonical form (sorted keys, no spaces), as
    hex: the checksum of ``tournament.json``'s identity and elapsed time."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def tournament_identity(
    specs: Sequence[str], rules: SkyjoRules, games: int, seed: int, chunk_deals: int,
    seating: str = "cyclic",
) -> dict[str, Any]:
    """What makes two runs the same tournament, as JSON-ready data: the specs, rules,
    games, seed, chunk size, seating, and the SHA-256 of every checkpoint a spec loads (a
    network retrained at the same path is another agent). ``format`` is the directory's
    layout version (`FORMAT`), not compared."""
    checkpoints = {}
    for spec in specs:
        for path in checkpoint_paths(spec, rules.num_players):
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
    identity there, or checks the identity and checksum already recorded.

    Args:
        directory: Where the chunks are kept: a new or empty directory, or one this
            tournament used before.
        identity: `tournament_identity` of the tournament being played.

    Attributes:
        notes: One-line notes for the user (a directory written before checksums).
        format: The directory's layout version (1 for a directory from before checksums,
            kept so that its chunks stay readable).

    Raises:
        ResumeError: The directory holds another tournament (the message names the first
            difference), files but no ``tournament.json``, a damaged or edited
            ``tournament.json``, or ``directory`` is a file or its parent is missing.
    """

    def __init__(self, directory: str | Path, identity: dict[str, Any]):
        self.directory = Path(directory)
        self.identity = identity
        self.notes: list[str] = []
        self.format = FORMAT
        if self.directory.exists() and not self.directory.is_dir():
            raise ResumeError(f"--resume {str(self.directory)!r} is a file, not a directory")
        if not self.directory.parent.is_dir():
            raise ResumeError(
                f"--resume: directory {str(self.directory.parent)!r} does not exist"
            )
        self._file = self.directory / TOURNAMENT_FILE
        if self._file.exists() or self._file.is_symlink():
            recorded = self._read_tournament()
            _check_same(recorded["identity"], identity, self._file)
            self.format = recorded["identity"]["format"]
            self.elapsed_s = recorded["elapsed_s"]
            if self.format == 1:
                self.notes.append(
                    f"note: {self.directory} was written before checksums (format 1): its "
                    "chunk files are read without one (their shapes, types and value ranges "
                    "are checked); new chunks get one")
        else:
            self._refuse_foreign_files()
            self.directory.mkdir(exist_ok=True)
            self.elapsed_s = 0.0
            self._write_tournament()

    def _refuse_foreign_files(self) -> None:
        """A directory without ``tournament.json`` must be empty: its files are no
        tournament's (or its ``tournament.json`` was deleted), and adopting it would mix
        them in or write beside them."""
        if not self.directory.is_dir():
            return
        found = sorted(path.name for path in self.directory.iterdir())
        if found:
            raise ResumeError(
                f"--resume {str(self.directory)!r} holds {len(found)} file(s) (e.g. "
                f"{shorten(found[0], 60)!r}) but no {TOURNAMENT_FILE}: not a resume "
                "directory of evaluate; give a new or empty directory"
            )

    def _read_tournament(self) -> dict[str, Any]:
        """``tournament.json``, its checksum and the types of its fields checked."""
        return _read_tournament_file(self._file)

    def _write_tournament(self) -> None:
        identity = {**self.identity, "format": self.format}
        record = {"identity": identity, "elapsed_s": self.elapsed_s}
        data = {**record, "sha256": record_digest(record)}
        with atomic_path(self._file) as temporary:
            temporary.write_text(json.dumps(data, indent=1) + "\n")

    def chunk_file(self, chunk: int) -> Path:
        """Where chunk ``chunk`` is kept."""
        return self.directory / f"chunk_{chunk:05d}.npz"

    def checksum_file(self, chunk: int) -> Path:
        """Where the SHA-256 of chunk ``chunk``'s file is kept."""
        return self.directory / f"chunk_{chunk:05d}.sha256"

    def _kept(self, chunk: int) -> bool:
        """Whether chunk ``chunk`` counts as kept: its file and, in a directory with
        checksums, its checksum file (a chunk without it is played again)."""
        if not self.chunk_file(chunk).exists():
            return False
        return self.format == 1 or self.checksum_file(chunk).exists()

    def has_all(self, chunks: int) -> bool:
        """Whether chunks ``0 .. chunks - 1`` are all kept (files present, not yet read)."""
        return all(self._kept(chunk) for chunk in range(chunks))

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
            ResumeError: The file is damaged, edited or holds other games.
        """
        path = self.chunk_file(chunk)
        if not self._kept(chunk):
            return None
        again = (f"delete it and {self.checksum_file(chunk).name} to play chunk {chunk} again"
                 if self.checksum_file(chunk).exists() else
                 f"delete it to play chunk {chunk} again")
        expected = GameRecords.empty(len(deals) * games_per_deal(num_players, seating),
                                     num_players, deals.start, seating)
        self._check_file(chunk, expected, again)
        arrays, names = _read_chunk(path, expected, num_players, again)
        for name, reference in ((f.name, getattr(expected, f.name)) for f in fields(GameRecords)):
            array = arrays[name]
            if array.shape != reference.shape or array.dtype != reference.dtype:
                raise ResumeError(f"{path}: {name} has shape {array.shape} and dtype "
                                  f"{array.dtype}, expected {reference.shape} {reference.dtype}; "
                                  f"{again}")
        for name in ("deal", "rotation", "seat"):
            if not np.array_equal(arrays[name], getattr(expected, name)):
                raise ResumeError(f"{path}: holds other games than chunk {chunk} (deal groups "
                                  f"{deals.start}..{deals.stop - 1}); {again}")
        _check_values(path, arrays, again)
        if names.shape != (num_players,) or names.dtype.kind != "U":
            raise ResumeError(f"{path}: names has shape {names.shape} and dtype "
                              f"{names.dtype}, expected {num_players} agent names; {again}")
        return GameRecords(**arrays), [str(name) for name in names]

    def _check_file(self, chunk: int, expected: GameRecords, again: str) -> None:
        """The chunk file's size and, when recorded, its SHA-256, before anything in it
        is parsed."""
        path = self.chunk_file(chunk)
        payload = sum(getattr(expected, f.name).nbytes for f in fields(GameRecords))
        most = 2 * payload + _CHUNK_OVERHEAD_BYTES
        try:
            size = path.stat().st_size
            if size > most:
                raise ResumeError(f"{path}: {size:,} bytes, more than chunk {chunk} can hold "
                                  f"(at most {most:,}); {again}")
            checksum_file = self.checksum_file(chunk)
            if not checksum_file.exists():
                return  # a directory from before checksums (`_kept`)
            if checksum_file.stat().st_size > 256:
                raise ResumeError(f"{checksum_file}: not a SHA-256 (too long); {again}")
            recorded = checksum_file.read_bytes().decode("ascii", "replace").strip()
            if not _SHA256.match(recorded):
                raise ResumeError(f"{checksum_file}: not a SHA-256 in hex; {again}")
            if file_digest(path) != recorded:
                raise ResumeError(f"{path}: its SHA-256 differs from the one in "
                                  f"{checksum_file.name} (the file was damaged or edited); "
                                  f"{again}")
        except OSError as error:
            raise ResumeError(f"{path}: unreadable ({one_line(error)}); {again}") from None

    def save(self, chunk: int, records: GameRecords, names: Sequence[str],
             elapsed_s: float) -> None:
        """Keep a finished chunk, its checksum, and the wall time spent on the tournament
        so far.

        Args:
            chunk: The chunk's index.
            records: Its games.
            names: The agents' display names.
            elapsed_s: Wall time of all runs so far, this chunk included.
        """
        arrays = {field.name: getattr(records, field.name) for field in fields(GameRecords)}
        path = self.chunk_file(chunk)
        with atomic_path(path, suffix=".npz") as temporary:
            with open(temporary, "wb") as handle:
                np.savez(handle, names=np.array(list(names)), **arrays)
            checksum = file_digest(temporary)
        with atomic_path(self.checksum_file(chunk)) as temporary:
            temporary.write_text(checksum + "\n")
        self.elapsed_s = float(elapsed_s)
        self._write_tournament()


@dataclass(frozen=True)
class FinishedChunks:
    """What an ``evaluate.py --resume`` directory holds so far (`read_finished_chunks`).

    Attributes:
        seed: The tournament's master seed.
        num_players: Agents per game.
        chunks: Chunks the whole tournament has.
        records: The games of each finished chunk, in chunk order (gaps possible: Ray
            workers finish chunks out of order).
        names: The agents' display names (empty when no chunk is finished).
    """

    seed: int
    num_players: int
    chunks: int
    records: list[GameRecords]
    names: list[str]


def read_finished_chunks(directory: str | Path) -> FinishedChunks:
    """The games of every chunk finished so far in an ``evaluate.py --resume`` directory,
    read without playing anything: while its tournament is still running, or after it
    was stopped (to pair two unfinished runs, ``skyjo-compare runs DIR_A DIR_B``).

    Every file is checked as a resumed run checks it; nothing on disk is changed.

    Args:
        directory: The directory given to ``evaluate.py --resume``.

    Raises:
        ResumeError: Not a resume directory (no ``tournament.json``), a damaged or edited
            file, or a recorded identity with invalid fields.
    """
    directory = Path(directory)
    record_file = directory / TOURNAMENT_FILE
    if not record_file.is_file():
        raise ResumeError(f"{directory}: no {TOURNAMENT_FILE}, so not a --resume directory "
                          "of evaluate.py")
    identity = _read_tournament_file(record_file)["identity"]
    layout = _recorded_layout(identity, record_file)
    store = ChunkStore(directory, identity)
    chunks = chunk_ranges(layout["deals"], layout["chunk_deals"])
    records, names = [], []
    for index, deals in enumerate(chunks):
        loaded = store.load(index, deals, layout["num_players"], layout["seating"])
        if loaded is not None:
            records.append(loaded[0])
            names = loaded[1]
    return FinishedChunks(layout["seed"], layout["num_players"], len(chunks), records, names)


def _recorded_layout(identity: dict[str, Any], where: Path) -> dict[str, Any]:
    """Seed, player count, seating, deal groups and chunk size of a recorded identity,
    each checked (a directory from before checksums may have been edited)."""
    seed, chunk_deals = identity.get("seed"), identity.get("chunk_deals")
    if type(seed) is not int or seed < 0:
        raise ResumeError(f"{where}: field 'seed' is {_shown(seed)}, not an int >= 0")
    if type(chunk_deals) is not int or chunk_deals < 1:
        raise ResumeError(f"{where}: field 'chunk_deals' is {_shown(chunk_deals)}, not an "
                          "int >= 1")
    try:
        rules = SkyjoRules.from_dict(identity.get("rules"))
        seating = check_seating({**_RECORDED_BEFORE, **identity}["seating"], rules.num_players)
        deals = deal_groups(identity.get("games"), rules.num_players, seating)
    except (TypeError, ValueError) as error:
        raise ResumeError(f"{where}: {one_line(error, 160)}") from None
    return {"seed": seed, "chunk_deals": chunk_deals, "num_players": rules.num_players,
            "seating": seating, "deals": deals}


def _read_tournament_file(where: Path) -> dict[str, Any]:
    """A ``tournament.json``: its identity and elapsed time, after its checksum and the
    types of its fields are checked (`ResumeError` otherwise)."""
    try:
        size = where.stat().st_size
        if size > MAX_TOURNAMENT_BYTES:
            raise ResumeError(f"{where}: {size:,} bytes, more than a tournament record "
                              f"holds (at most {MAX_TOURNAMENT_BYTES:,})")
        data = json.loads(where.read_bytes().decode("utf-8"))
    except ResumeError:
        raise
    except (OSError, ValueError, RecursionError) as error:
        raise ResumeError(f"{where}: unreadable ({one_line(error)}); delete the "
                          "directory to start the tournament afresh") from None
    if not isinstance(data, dict) or not isinstance(data.get("identity"), dict):
        raise ResumeError(f"{where}: not a tournament record (no 'identity' object)")
    identity = data["identity"]
    version = identity.get("format")
    if type(version) is not int or version not in READABLE_FORMATS:
        raise ResumeError(f"{where}: field 'format' is {_shown(version)}, not a layout "
                          f"this version reads ({', '.join(map(str, READABLE_FORMATS))}); "
                          "use another --resume directory")
    checksum = data.get("sha256")
    if checksum is None and version >= 2:
        raise ResumeError(f"{where}: field 'sha256' (its checksum) is missing; the file "
                          "was edited or damaged: delete the directory to start afresh")
    elapsed = data.get("elapsed_s", 0.0)
    if (type(elapsed) not in (int, float) or not math.isfinite(elapsed) or elapsed < 0):
        raise ResumeError(f"{where}: field 'elapsed_s' is {_shown(elapsed)}, not a "
                          "finite number of seconds >= 0")
    if checksum is not None:
        if not isinstance(checksum, str) or not _SHA256.match(checksum):
            raise ResumeError(f"{where}: field 'sha256' is {_shown(checksum)}, not a "
                              "SHA-256 in hex")
        if _digest_or_none({"identity": identity, "elapsed_s": elapsed}) != checksum:
            raise ResumeError(f"{where}: its contents do not match field 'sha256' (the "
                              "file was edited or damaged); delete the directory to "
                              "start the tournament afresh")
    return {"identity": identity, "elapsed_s": float(elapsed)}


def _read_chunk(
    path: Path, expected: GameRecords, num_players: int, again: str
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The arrays of a chunk file: every `GameRecords` field and ``names``.

    Each array's header is checked against ``expected`` before its data is read (a header
    of a damaged file could declare a huge shape). A file that is no archive, a missing
    field, or any failure while reading (a damaged file from before checksums can fail in
    many ways) is a `ResumeError`."""
    if not zipfile.is_zipfile(path):
        raise ResumeError(f"{path}: not a chunk file (no .npz archive); {again}")
    wanted = {field.name: getattr(expected, field.name) for field in fields(GameRecords)}
    try:
        with zipfile.ZipFile(path) as archive:
            for name, reference in wanted.items():
                _check_header(path, archive, name, reference.shape, reference.dtype, again)
            _check_header(path, archive, "names", (num_players,), None, again)
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in [*wanted, "names"]}
    except ResumeError:
        raise
    except Exception as error:  # noqa: BLE001  # zip, header and data errors of a damaged file
        raise ResumeError(f"{path}: unreadable ({one_line(error, 120)}); {again}") from None
    return arrays, arrays.pop("names")


def _check_header(path: Path, archive: zipfile.ZipFile, name: str, shape: tuple,
                  dtype: np.dtype | None, again: str) -> None:
    """Member ``name`` of a chunk archive has an array header of ``shape`` and ``dtype``
    (None: any unicode string type), else a `ResumeError` naming the field."""
    try:
        info = archive.getinfo(f"{name}.npy")
    except KeyError:
        raise ResumeError(f"{path}: field {name!r} is missing; {again}") from None
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        found_shape, _, found_dtype = read(member)
    type_ok = found_dtype.kind == "U" if dtype is None else found_dtype == dtype
    if found_shape != shape or not type_ok:
        wanted = "str" if dtype is None else dtype
        raise ResumeError(f"{path}: field {name!r} has shape {shorten(str(found_shape), 60)} "
                          f"and dtype {shorten(str(found_dtype), 40)}, expected {shape} "
                          f"{wanted}; {again}")


def _check_values(path: Path, arrays: dict[str, np.ndarray], again: str) -> None:
    """Value ranges of a chunk's records (a file from before checksums may have been
    edited): win shares in [0, 1], counts >= 0, everything within `_MAX_RECORDED`."""
    share = arrays["win_share"]
    if not (np.isfinite(share).all() and (share >= 0).all() and (share <= 1).all()):
        raise ResumeError(f"{path}: field 'win_share' has values outside [0, 1]; {again}")
    if (np.abs(arrays["total"]) > _MAX_RECORDED).any():
        raise ResumeError(f"{path}: field 'total' has values beyond +-{_MAX_RECORDED:,}; "
                          f"{again}")
    bounds = {"rounds": MAX_ROUNDS, "rounds_finished": MAX_ROUNDS,
              "times_penalised": MAX_ROUNDS, "lines_eliminated": _MAX_RECORDED,
              "decisions": _MAX_RECORDED}
    for name, most in bounds.items():
        values = arrays[name]
        if values.size and (values.min() < 0 or values.max() > most):
            raise ResumeError(f"{path}: field {name!r} has values outside 0..{most:,}; "
                              f"{again}")


def _digest_or_none(record: dict[str, Any]) -> str | None:
    """`record_digest`, or None for a record no JSON holds (a NaN read from the file)."""
    try:
        return record_digest(record)
    except ValueError:
        return None


def _shown(value: Any) -> str:
    """A recorded value in a one-line message: its repr, cut short."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an int of {len(str(abs(value)))} digits"
    return shorten(repr(value), 80)


#: Identity fields added after the first directories were written, with the value those
#: directories played (so they still resume).
_RECORDED_BEFORE = {"seating": "cyclic"}


def _check_same(recorded: dict[str, Any], identity: dict[str, Any], where: Path) -> None:
    """Raise `ResumeError` naming the first field where ``recorded`` differs (``format``
    aside: the directory's layout version, checked when read)."""
    recorded = {**_RECORDED_BEFORE, **recorded}
    for key, value in identity.items():
        if key == "format" or recorded.get(key) == value:
            continue
        old = recorded.get(key)
        if key == "checkpoints" and isinstance(old, dict):
            changed = sorted(str(path) for path in set(value) | set(old)
                             if value.get(path) != old.get(path))
            raise ResumeError(
                f"{where.parent}: checkpoint {shorten(changed[0], 200)!r} changed since the "
                "chunks there were played; use another --resume directory"
            )
        raise ResumeError(
            f"{where.parent} holds another tournament: {key} was {_shown(old)}, this run "
            f"has {_shown(value)}; use another --resume directory or the same arguments"
        )


__all__ = ["FORMAT", "READABLE_FORMATS", "TOURNAMENT_FILE", "ChunkStore", "FinishedChunks",
           "ResumeError", "file_digest", "read_finished_chunks", "record_digest",
           "tournament_identity"]

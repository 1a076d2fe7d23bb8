"""Fuzz of ``evaluate.py --resume DIR`` (#34): a finished resume directory whose chunk files
or ``tournament.json`` were truncated, had bytes flipped, fields of the wrong type, huge
numbers or dropped keys. Every case must end with exit status 2 and one line on stderr
naming the file, no traceback, every file on disk unchanged, within 10 s.

Seeded (`SEED`) and bounded (`CASES_PER_KIND` random cases per kind of damage; about 5 s
in all). The directory is complete, so ``--workers 1`` starts no Ray: the cases run
in-process through `agents.cli.evaluate.main`, and two of them through a fresh
interpreter as well (marked slow).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from agents.cli.evaluate import main
from agents.evaluation.distributed import chunk_ranges, play_chunk
from agents.evaluation.games import deal_groups
from agents.evaluation.resume import ChunkStore, record_digest, tournament_identity
from skyjo_env.core.rules import load_rules

SEED = 34
CASES_PER_KIND = 6
SPECS = ["ev", "greedy"]
GAMES, CHUNK_DEALS, MASTER_SEED = 8, 2, 0
ARGV = ["--agents", *SPECS, "--games", str(GAMES), "--seed", str(MASTER_SEED), "--workers",
        "1", "--chunk-deals", str(CHUNK_DEALS), "--no-progress", "--resume"]
ROOT = Path(__file__).resolve().parents[2]
CASE_SECONDS = 10.0


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A complete resume directory of ``ev`` against ``greedy`` (2 chunks), as a run of
    ``ARGV`` leaves it."""
    directory = tmp_path_factory.mktemp("fuzz") / "run"
    rules = load_rules("official", num_players=len(SPECS))
    store = ChunkStore(directory, tournament_identity(SPECS, rules, GAMES, MASTER_SEED,
                                                      CHUNK_DEALS))
    for index, deals in enumerate(chunk_ranges(deal_groups(GAMES, 2, "cyclic"), CHUNK_DEALS)):
        records, names = play_chunk(SPECS, rules.to_dict(), MASTER_SEED, index, deals)
        store.save(index, records, names, 1.0 + index)
    assert main(ARGV + [str(directory)]) == 0  # the undamaged directory resumes
    return directory


def _digests(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file()
            else "dir" for path in sorted(directory.iterdir())}


def _assert_refused_in_one_line(directory: Path, capsys, naming: str) -> None:
    """``main`` on ``directory``: exit 2, one stderr line naming ``naming``, no traceback,
    no file changed, under `CASE_SECONDS`."""
    before = _digests(directory)
    capsys.readouterr()
    started = time.perf_counter()
    code = main(ARGV + [str(directory)])
    took = time.perf_counter() - started
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, err, out)
    assert len(lines) == 1 and lines[0].startswith("evaluate: error: "), err
    assert naming in lines[0], lines[0]
    assert "Traceback" not in err + out
    assert len(lines[0]) < 1200
    assert _digests(directory) == before
    assert took < CASE_SECONDS


def _copy(finished: Path, tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    shutil.copytree(finished, directory)
    return directory


def _as_format_1(directory: Path) -> None:
    """Rewrite ``directory`` as a run from before checksums left it."""
    for path in directory.glob("*.sha256"):
        path.unlink()
    record_file = directory / "tournament.json"
    record = json.loads(record_file.read_text())
    del record["sha256"]
    record["identity"]["format"] = 1
    record_file.write_text(json.dumps(record))


def _rewrite_npz(path: Path, change) -> None:
    """Rewrite a chunk archive with ``change(arrays)`` applied (a dict of arrays)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    change(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


def _byte_damage(rng: np.random.Generator, data: bytes) -> list[tuple[str, bytes]]:
    """Seeded truncations, flipped bytes and appended garbage of ``data``."""
    cases = []
    for _ in range(CASES_PER_KIND):
        cut = int(rng.integers(0, len(data)))
        cases.append((f"truncated to {cut}", data[:cut]))
        flipped = bytearray(data)
        where = int(rng.integers(0, len(data)))
        flipped[where] ^= 1 << int(rng.integers(0, 8))
        cases.append((f"bit flipped at {where}", bytes(flipped)))
    cases.append(("garbage appended", data + bytes(rng.integers(0, 256, 64, dtype=np.uint8))))
    return cases


CHUNK_EDITS = {
    "win_share as float32": lambda a: a.__setitem__("win_share", a["win_share"].astype(np.float32)),
    "total as float": lambda a: a.__setitem__("total", a["total"].astype(np.float64)),
    "huge total": lambda a: a["total"].__setitem__((0, 0), 10**15),
    "NaN win share": lambda a: a["win_share"].__setitem__((0, 0), np.nan),
    "negative rounds": lambda a: a["rounds"].__setitem__(0, -1),
    "names as ints": lambda a: a.__setitem__("names", np.arange(2)),
    "three names": lambda a: a.__setitem__("names", np.array(["a", "b", "c"])),
    "decisions dropped": lambda a: a.pop("decisions"),
    "rows missing": lambda a: a.__setitem__("total", a["total"][:-1]),
    "huge declared shape": lambda a: a.__setitem__("rounds", np.zeros(10**6, np.int64)),
    "edited value": lambda a: a["total"].__setitem__((0, 0), a["total"][0, 0] + 1),
}


def test_fuzz_chunks__damaged_chunk_bytes_are_one_line_exit_2(finished, tmp_path, capsys):
    rng = np.random.default_rng(SEED)
    original = (finished / "chunk_00001.npz").read_bytes()
    for number, (_, damaged) in enumerate(_byte_damage(rng, original)):
        directory = _copy(finished, tmp_path / str(number))
        (directory / "chunk_00001.npz").write_bytes(damaged)
        _assert_refused_in_one_line(directory, capsys, "chunk_00001")


@pytest.mark.parametrize("edit", sorted(CHUNK_EDITS))
def test_fuzz_chunks__edited_chunk_arrays_are_one_line_exit_2(finished, tmp_path, capsys, edit):
    directory = _copy(finished, tmp_path)
    _rewrite_npz(directory / "chunk_00000.npz", CHUNK_EDITS[edit])
    _assert_refused_in_one_line(directory, capsys, "chunk_00000.npz: ")


@pytest.mark.parametrize("edit", sorted(set(CHUNK_EDITS) - {"edited value"}))
def test_fuzz_chunks__edited_chunks_from_before_checksums_are_one_line_exit_2(
    finished, tmp_path, capsys, edit
):
    directory = _copy(finished, tmp_path)
    _as_format_1(directory)
    _rewrite_npz(directory / "chunk_00000.npz", CHUNK_EDITS[edit])
    _assert_refused_in_one_line(directory, capsys, "chunk_00000.npz: ")


def _declare_huge_shape(path: Path) -> None:
    """Rewrite a chunk archive so that member ``rounds.npy`` declares 10**13 elements in
    its header (its data unchanged, the archive's CRCs recomputed: only the header check
    can refuse it before numpy allocates)."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = members["rounds.npy"]
    start = header.index(b"'shape': (")
    end = header.index(b"}", start) + 1
    padding = header.index(b"\n", end) - end
    huge = b"'shape': (10000000000000,), }"
    grown = len(huge) - (end - start)
    assert padding > grown
    members["rounds.npy"] = (header[:start] + huge + header[end:end + padding - grown]
                             + header[end + padding:])
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_fuzz_chunks__a_huge_declared_shape_is_refused_before_reading(finished, tmp_path,
                                                                       capsys):
    for checksums in (True, False):
        directory = _copy(finished, tmp_path / str(checksums))
        if not checksums:
            _as_format_1(directory)
        _declare_huge_shape(directory / "chunk_00000.npz")
        _assert_refused_in_one_line(
            directory, capsys,
            "its SHA-256 differs" if checksums else "field 'rounds' has shape (10000000000000,)")


def test_fuzz_chunks__damaged_chunks_from_before_checksums_never_crash(
    finished, tmp_path, capsys
):
    """Without checksums a flipped byte may go unnoticed (a zip timestamp); a damaged file
    is then read as it is. Never a traceback: exit 2 in one line, or a report."""
    rng = np.random.default_rng(SEED + 1)
    original = (finished / "chunk_00001.npz").read_bytes()
    refused = 0
    for number, (what, damaged) in enumerate(_byte_damage(rng, original)):
        directory = _copy(finished, tmp_path / str(number))
        _as_format_1(directory)
        (directory / "chunk_00001.npz").write_bytes(damaged)
        before = _digests(directory)
        capsys.readouterr()
        started = time.perf_counter()
        code = main(ARGV + [str(directory)])
        out, err = capsys.readouterr()
        assert "Traceback" not in err + out, what
        assert code in (0, 2), (what, err)
        if code == 2:
            refused += 1
            lines = [line for line in err.splitlines() if line.strip()]
            assert len(lines) == 1 and "chunk_00001.npz: " in lines[0], (what, err)
        assert _digests(directory) == before
        assert time.perf_counter() - started < CASE_SECONDS
    assert refused >= CASES_PER_KIND  # every truncation at least


def _tournament_cases(rng: np.random.Generator, text: str) -> list[tuple[str, str | bytes]]:
    """Damaged ``tournament.json`` texts: bytes, types, huge numbers, dropped keys."""
    record = json.loads(text)

    def edited(change, resign=False) -> str:
        copy = json.loads(text)
        change(copy)
        if resign:  # the checksum recomputed: only the content checks are left
            with contextlib.suppress(ValueError):  # no checksum of an infinite time
                copy["sha256"] = record_digest({"identity": copy["identity"],
                                                "elapsed_s": copy["elapsed_s"]})
        return json.dumps(copy)

    cases: list[tuple[str, str | bytes]] = list(_byte_damage(rng, text.encode()))
    changes = {
        "elapsed_s a string": lambda r: r.__setitem__("elapsed_s", "abc"),
        "elapsed_s infinite": lambda r: r.__setitem__("elapsed_s", 1e308 * 10),
        "elapsed_s negative": lambda r: r.__setitem__("elapsed_s", -1.0),
        "identity a list": lambda r: r.__setitem__("identity", [1, 2]),
        "games a string": lambda r: r["identity"].__setitem__("games", "8"),
        "seed huge": lambda r: r["identity"].__setitem__("seed", 10**100),
        "checkpoints a list": lambda r: r["identity"].__setitem__("checkpoints", []),
        "specs dropped": lambda r: r["identity"].pop("specs"),
        "format a string": lambda r: r["identity"].__setitem__("format", "2"),
        "format 99": lambda r: r["identity"].__setitem__("format", 99),
        "sha256 a number": lambda r: r.__setitem__("sha256", 123),
        "sha256 dropped": lambda r: r.pop("sha256"),
        "identity dropped": lambda r: r.pop("identity"),
    }
    for name, change in changes.items():
        cases.append((name, edited(change)))
        if "identity" in name or "sha256" in name:
            continue
        cases.append((f"{name}, checksum recomputed", edited(change, resign=True)))
    digits = "9" * 5000
    cases += [
        ("a 5000-digit number", text.replace(f'"seed": {record["identity"]["seed"]}',
                                            f'"seed": {digits}')),
        ("nested 100000 deep", "[" * 100_000 + "]" * 100_000),
        ("not UTF-8", b"\xff\xfe{}"),
        ("two megabytes", " " * (2 << 20) + text),
        ("a list", "[]"),
        ("NaN elapsed", text.replace('"elapsed_s": 2.0', '"elapsed_s": NaN')),
    ]
    return cases


def test_fuzz_chunks__damaged_tournament_json_is_one_line_exit_2(finished, tmp_path, capsys):
    rng = np.random.default_rng(SEED + 2)
    text = (finished / "tournament.json").read_text()
    for number, (what, damaged) in enumerate(_tournament_cases(rng, text)):
        directory = _copy(finished, tmp_path / str(number))
        target = directory / "tournament.json"
        if isinstance(damaged, bytes):
            target.write_bytes(damaged)
        else:
            target.write_text(damaged)
        if what.startswith("bit flipped") and target.read_bytes() == text.encode():
            continue
        try:
            _assert_refused_in_one_line(directory, capsys, "")
        except AssertionError as error:
            raise AssertionError(f"case {what!r}: {error}") from None


def test_fuzz_chunks__tournament_json_as_a_directory_is_one_line_exit_2(
    finished, tmp_path, capsys
):
    directory = _copy(finished, tmp_path)
    (directory / "tournament.json").unlink()
    (directory / "tournament.json").mkdir()
    _assert_refused_in_one_line(directory, capsys, "tournament.json")


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("damage, naming", [
    ("chunk", "chunk_00001.npz: its SHA-256 differs"),
    ("tournament", "tournament.json: "),
])
def test_fuzz_chunks__a_fresh_interpreter_prints_one_line_and_exits_2(
    finished, tmp_path, damage, naming
):
    directory = _copy(finished, tmp_path)
    if damage == "chunk":
        path = directory / "chunk_00001.npz"
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        path = directory / "tournament.json"
        path.write_text(path.read_text().replace('"elapsed_s": 2.0', '"elapsed_s": "x"'))
    before = _digests(directory)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "evaluate.py", *ARGV, str(directory)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=environment)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and naming in lines[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert _digests(directory) == before


def test_fuzz_chunks__chunk_archive_is_a_zip_of_npy_members(finished):
    """The damage above hits the format it means to: an uncompressed zip of .npy arrays."""
    with zipfile.ZipFile(finished / "chunk_00000.npz") as archive:
        assert "decisions.npy" in archive.namelist()
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}

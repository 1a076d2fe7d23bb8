"""Seeded, bounded fuzzing of checkpoints and resume states (issue #34): every mutation is
refused with one `CheckpointError` line naming the file, in under 10 s, with nothing on
disk changed; through ``train.py --resume`` it is exit 2 and one ``error:`` line.

Mutations: bytes (truncation, flipped bytes, garbage appended; the checksums or the zip's
CRCs catch those that change a member; one that changes none, e.g. a flipped timestamp
bit, must load as before) and, re-signed like a careful editor would (so the schema itself is what
is tested), JSON leaves replaced by values of another type or huge numbers, required keys
dropped, and arrays of another shape or dtype, missing or unknown.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from checkpoint_edits import (
    edit_arrays,
    file_hashes,
    members_of,
    resume_checked,
    rewrite,
    train_tiny_run,
)

from agents.ppo.checkpoint import META_MEMBER, CheckpointError, load_policy, read_metadata
from agents.training.run_state import TRAINING_STATE_JSON

ROOT = Path(__file__).resolve().parents[2]
CASES_PER_KIND = 40
SECONDS_PER_CASE = 10.0
#: Fields a mutation may leave valid (free-form, optional or nullable), not mutated.
_FREE = ("config", "integrity", "pending_log", "imitation_stats", "failure", "max_rounds",
         "seeds", "gauss")
#: Keys that may be left out (optional, or the network description's fallback).
_OPTIONAL = ("score", "best_score", "best_pool_score", "snapshots", "policy", "next_expert")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("fuzz") / "run")


def _leaves(value, prefix=()):
    """(path, value) of every scalar leaf of a JSON value (None leaves left out)."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _leaves(child, (*prefix, index))
    elif value is not None:
        yield prefix, value


def _keys(value, prefix=()):
    """The path of every object key of a JSON value."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from _keys(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _keys(child, (*prefix, index))


def _fuzzable(path) -> bool:
    # deck counts are keyed by card value: dropping one gives other, valid rules
    return not any(part in _FREE or part == "deck" for part in path)


def _wrong_values(value) -> list:
    """Values of another JSON type than ``value``, and huge or negative numbers."""
    if isinstance(value, bool):
        return ["abc", 7, [], {}]
    if isinstance(value, (int, float)):
        return ["abc", True, [], {"x": [1]}, 10**40, -(10**40), math.inf]  # 10**40 > 2**128
    if isinstance(value, str):
        return [7, [], {}, True, "x" * 10_000]
    return ["abc", 7]


def _set_path(document, path, value):
    target = document
    for key in path[:-1]:
        target = target[key]
    if value is _DROP:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DROP = object()


def _json_mutation(rng: np.random.Generator, document):
    """A re-signable mutation of a JSON document: a leaf replaced, a key dropped, or the
    whole document replaced by another type."""
    kind = rng.choice(["leaf", "leaf", "leaf", "drop", "whole"])
    if kind == "whole":
        return rng.choice(["[]", "7", '"text"', "null"]).encode(), "whole"
    mutated = json.loads(json.dumps(document))
    if kind == "drop":
        # a rules field left out takes its default: other, valid rules
        candidates = [p for p in _keys(document)
                      if _fuzzable(p) and "rules" not in p[:-1] and p[-1] not in _OPTIONAL]
        path = candidates[rng.integers(len(candidates))]
        _set_path(mutated, path, _DROP)
        return json.dumps(mutated).encode(), f"drop {path}"
    candidates = [(p, v) for p, v in _leaves(document) if _fuzzable(p)]
    path, value = candidates[rng.integers(len(candidates))]
    options = _wrong_values(value)
    replacement = options[rng.integers(len(options))]
    _set_path(mutated, path, replacement)
    return json.dumps(mutated).encode(), f"{path} = {str(replacement)[:20]}"


def _byte_mutation(rng: np.random.Generator, content: bytes) -> tuple[bytes, str]:
    """Truncated, flipped or extended bytes of a whole file."""
    kind = rng.choice(["truncate", "flip", "append"])
    data = bytearray(content)
    if kind == "truncate":
        cut = int(rng.integers(0, len(data)))
        return bytes(data[:cut]), f"truncate at {cut}"
    if kind == "flip":
        for index in rng.integers(0, len(data), size=int(rng.integers(1, 9))):
            data[index] ^= 1 << int(rng.integers(8))
        return bytes(data), "flip bytes"
    return bytes(data) + rng.bytes(int(rng.integers(1, 5000))), "append garbage"  # harmless


def _array_mutation(rng: np.random.Generator, path: Path) -> str:
    with np.load(__import__("io").BytesIO(members_of(path)["training_state.npz"])) as data:
        names = sorted(data.files)
    name = names[rng.integers(len(names))]
    kind = rng.choice(["shape", "dtype", "missing", "unknown"])

    def change(arrays):
        array = arrays[name]
        if kind == "shape":
            arrays[name] = array.reshape(-1)[: max(array.size - 1, 0)] if array.ndim == 1 \
                else array[:-1]
        elif kind == "dtype":
            arrays[name] = array.astype(np.complex64 if array.dtype != np.complex64 else np.int8)
        elif kind == "missing":
            del arrays[name]
        else:
            arrays["unknown_array"] = np.zeros(3)
        return arrays

    edit_arrays(path, change)
    return f"array {name}: {kind}"


def _mutate(rng: np.random.Generator, checkpoint: Path, with_state: bool) -> str:
    """Apply one seeded mutation to ``checkpoint``; returns what it did."""
    kinds = ["bytes", "metadata"] + (["state", "state", "arrays"] if with_state else [])
    kind = kinds[rng.integers(len(kinds))]
    if kind == "bytes":
        content, what = _byte_mutation(rng, checkpoint.read_bytes())
        checkpoint.write_bytes(content)
        return what
    if kind == "arrays":
        return _array_mutation(rng, checkpoint)
    member = META_MEMBER if kind == "metadata" else TRAINING_STATE_JSON
    content, what = _json_mutation(rng, json.loads(members_of(checkpoint)[member]))
    rewrite(checkpoint, {member: content})
    return f"{member}: {what}"


def _same_content(path: Path, original: dict[str, bytes]) -> bool:
    """Whether the zip at ``path`` still holds exactly ``original``'s members (a flipped
    byte in a timestamp or garbage after the archive changes no content: loading is
    then right)."""
    try:
        return members_of(path) == original
    except Exception:  # anything zipfile raises: the content is damaged
        return False


def _assert_refused(call, where: Path, what: str, original: dict[str, bytes]) -> None:
    """``call`` raises one `CheckpointError` line naming ``where`` within the time bound,
    or, when the mutation left every member as it was, succeeds."""
    started = time.perf_counter()
    if _same_content(where, original):
        call()
    else:
        with pytest.raises(CheckpointError) as caught:
            call()
        message = str(caught.value)
        assert "\n" not in message and where.name in message, (what, message)
    assert time.perf_counter() - started < SECONDS_PER_CASE, what


@pytest.mark.parametrize("seed", range(CASES_PER_KIND))
def test_fuzz__mutated_resume_state_is_refused_in_one_line_changing_nothing(
        tiny_run, tmp_path, seed):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    last = run / "checkpoints" / "last.zip"
    original = members_of(last)
    what = _mutate(np.random.default_rng([34, seed]), last, with_state=True)
    before = file_hashes(run)
    _assert_refused(lambda: resume_checked(run), last, what, original)
    assert file_hashes(run) == before, what


@pytest.mark.parametrize("seed", range(CASES_PER_KIND))
def test_fuzz__mutated_checkpoint_is_refused_by_the_loader_in_one_line(tiny_run, tmp_path, seed):
    path = tmp_path / "best.zip"
    shutil.copy(tiny_run / "best.zip", path)
    original = members_of(path)
    what = _mutate(np.random.default_rng([35, seed]), path, with_state=False)
    before = file_hashes(tmp_path)
    _assert_refused(lambda: load_policy(path), path, what, original)
    _assert_refused(lambda: read_metadata(path), path, what, original)
    assert file_hashes(tmp_path) == before, what


@pytest.mark.slow  # a train.py process each
@pytest.mark.parametrize("seed", range(3))
def test_fuzz__mutated_resume_state_through_train_cli_exits_2_with_one_line(
        tiny_run, tmp_path, seed):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    last = run / "checkpoints" / "last.zip"
    original, rng = members_of(last), np.random.default_rng([36, seed])
    what = _mutate(rng, last, with_state=True)
    while _same_content(last, original):  # a harmless mutation: draw another
        what = _mutate(rng, last, with_state=True)
    before = file_hashes(run)
    result = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--resume", "--run-dir", str(run),
         "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 2, (what, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (what, result.stderr[-2000:])
    assert file_hashes(run) == before, what

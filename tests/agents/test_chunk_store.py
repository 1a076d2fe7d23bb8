"""`ChunkStore` (``evaluate.py --resume``): chunks kept and read back exactly; a directory
of another tournament, a changed checkpoint or a damaged chunk is a one-line error."""

from __future__ import annotations

import json
import shutil
from dataclasses import fields

import numpy as np
import pytest

from agents.baselines.heuristics import EVAgent, GreedyAgent
from agents.cli.evaluate import main
from agents.evaluation.games import GameRecords, play_deals
from agents.evaluation.resume import (
    ChunkStore,
    ResumeError,
    file_digest,
    read_finished_chunks,
    tournament_identity,
)
from agents.registry import checkpoint_path, checkpoint_paths
from skyjo_env.core.rules import SkyjoRules

SPECS = ["ev", "greedy"]


def _identity(rules=None, seed=3, specs=SPECS):
    return tournament_identity(specs, rules or SkyjoRules(), 40, seed, 4)


def _chunk(deals: range):
    rules = SkyjoRules()
    records, _ = play_deals([EVAgent(rules, 0), GreedyAgent(rules, 1)], rules, 3, deals)
    return records


def test_chunk_store__a_kept_chunk_reads_back_exactly_with_its_names(tmp_path):
    store = ChunkStore(tmp_path / "run", _identity())
    records = _chunk(range(4, 8))
    assert store.load(1, range(4, 8), 2) is None
    store.save(1, records, ["ev", "greedy"], 12.5)
    again = ChunkStore(tmp_path / "run", _identity())  # a later run over the same directory
    loaded, names = again.load(1, range(4, 8), 2)
    assert names == ["ev", "greedy"] and again.elapsed_s == 12.5
    for field in fields(GameRecords):
        np.testing.assert_array_equal(getattr(loaded, field.name), getattr(records, field.name))
    assert again.has_all(1) is False  # chunk 0 is missing
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "chunk_00001.npz", "chunk_00001.sha256", "tournament.json"]  # no temporary files


@pytest.mark.parametrize("change, words", [
    (dict(seed=4), "seed was 3, this run has 4"),
    (dict(specs=["greedy", "ev"]), "specs was ['ev', 'greedy'], this run has ['greedy', 'ev']"),
    (dict(rules=SkyjoRules(target_score=50)), "rules was"),
])
def test_chunk_store__another_tournament_is_refused_by_name(tmp_path, change, words):
    ChunkStore(tmp_path, _identity())
    with pytest.raises(ResumeError, match="holds another tournament") as error:
        ChunkStore(tmp_path, _identity(**change))
    assert words in str(error.value) and "\n" not in str(error.value)


def test_read_finished_chunks__the_chunks_kept_so_far_in_chunk_order(tmp_path):
    store = ChunkStore(tmp_path / "run", _identity())  # 40 games: 20 deals, 5 chunks of 4
    kept = {3: _chunk(range(12, 16)), 1: _chunk(range(4, 8))}
    for chunk, records in kept.items():
        store.save(chunk, records, ["ev", "greedy"], 1.0)
    finished = read_finished_chunks(tmp_path / "run")
    assert (finished.seed, finished.num_players, finished.chunks) == (3, 2, 5)
    assert finished.names == ["ev", "greedy"]
    assert [int(part.deal[0]) for part in finished.records] == [4, 12]
    for part, chunk in zip(finished.records, (1, 3), strict=True):
        np.testing.assert_array_equal(part.win_share, kept[chunk].win_share)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "chunk_00001.npz", "chunk_00001.sha256", "chunk_00003.npz", "chunk_00003.sha256",
        "tournament.json"]  # reading wrote nothing


def test_read_finished_chunks__no_record_or_a_damaged_chunk_is_named(tmp_path):
    (tmp_path / "other").mkdir()
    with pytest.raises(ResumeError, match="no tournament.json, so not a --resume directory"):
        read_finished_chunks(tmp_path / "other")
    store = ChunkStore(tmp_path / "run", _identity())
    store.save(0, _chunk(range(0, 4)), ["ev", "greedy"], 1.0)
    with open(store.chunk_file(0), "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff")
    with pytest.raises(ResumeError, match="chunk_00000.npz: its SHA-256 differs"):
        read_finished_chunks(tmp_path / "run")


def test_chunk_store__a_checkpoint_changed_since_is_refused(tmp_path):
    network = tmp_path / "net.zip"
    shutil.copy("models/ppo_2p.zip", network)
    specs = ["ev", f"search(samples=2):ppo:{network}"]
    assert checkpoint_path(specs[1]) == str(network)
    ChunkStore(tmp_path / "run", _identity(specs=specs))
    with network.open("ab") as handle:  # retrained at the same path
        handle.write(b"\0")
    with pytest.raises(ResumeError, match=f"checkpoint '{network}' changed since"):
        ChunkStore(tmp_path / "run", _identity(specs=specs))


def test_chunk_store__an_opponents_checkpoint_changed_since_is_refused(tmp_path):
    network = tmp_path / "opponent.zip"
    shutil.copy("models/ppo_2p.zip", network)
    specs = ["ev", f"search(samples=2,opponents=ppo:{network}):ppo:models/ppo_2p.zip"]
    ChunkStore(tmp_path / "run", _identity(specs=specs))
    with network.open("ab") as handle:  # the opponent model retrained at the same path
        handle.write(b"\0")
    with pytest.raises(ResumeError, match=f"checkpoint '{network}' changed since"):
        ChunkStore(tmp_path / "run", _identity(specs=specs))


def test_chunk_store__damaged_or_foreign_chunks_are_named(tmp_path):
    store = ChunkStore(tmp_path, _identity())
    store.save(0, _chunk(range(0, 4)), ["ev", "greedy"], 1.0)
    with pytest.raises(ResumeError, match="holds other games than chunk 0"):
        store.load(0, range(4, 8), 2)  # the file of chunk 0 read as another chunk's
    store.chunk_file(2).write_bytes(b"half a file")
    assert store.load(2, range(8, 12), 2) is None  # no checksum: cut off, played again
    store.checksum_file(2).write_text(store.checksum_file(0).read_text())
    with pytest.raises(ResumeError, match="chunk_00002.npz: its SHA-256 differs .* play chunk 2"):
        store.load(2, range(8, 12), 2)
    store.checksum_file(2).write_text(file_digest(store.chunk_file(2)))
    with pytest.raises(ResumeError, match="chunk_00002.npz: not a chunk file .* play chunk 2"):
        store.load(2, range(8, 12), 2)
    (tmp_path / "tournament.json").write_text("{")
    with pytest.raises(ResumeError, match="tournament.json: unreadable"):
        ChunkStore(tmp_path, _identity())


def test_chunk_store__a_directory_from_before_seatings_resumes_as_cyclic(tmp_path):
    ChunkStore(tmp_path, _identity())
    record_file = tmp_path / "tournament.json"
    record = json.loads(record_file.read_text())
    # written before the identity held the seating, so before checksums (format 1)
    del record["identity"]["seating"], record["sha256"]
    record["identity"]["format"] = 1
    record_file.write_text(json.dumps(record))
    ChunkStore(tmp_path, _identity())
    seated = tournament_identity(SPECS, SkyjoRules(), 40, 3, 4, seating="all")
    with pytest.raises(ResumeError, match="seating was 'cyclic', this run has 'all'"):
        ChunkStore(tmp_path, seated)


def test_chunk_store__identity_reads_back_equal(tmp_path):
    identity = _identity()
    ChunkStore(tmp_path, identity)
    assert json.loads((tmp_path / "tournament.json").read_text())["identity"] == identity


def test_main__resume_without_ray_or_into_a_file_is_a_one_line_error(tmp_path, capsys):
    argv = ["--agents", "ev", "greedy", "--games", "4", "--no-progress"]
    assert main(argv + ["--resume", str(tmp_path)]) == 2
    assert "--resume applies only with --workers or --ray-address" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(argv + ["--workers", "1", "--resume", str(tmp_path / "file")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert main(argv + ["--workers", "1", "--resume", str(tmp_path / "no" / "dir")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("spec, path", [
    ("ppo:models/a.zip", "models/a.zip"),
    ("search:ppo:b.zip", "b.zip"),
    ("search(samples=4,luck=adjusted):search:ppo:c.zip", "c.zip"),
    ("search:ev", None),
    ("ev", None),
    ("mypackage.agents:PPOLike", None),
])
def test_checkpoint_path__the_file_a_spec_loads(spec, path):
    assert checkpoint_path(spec) == path


@pytest.mark.parametrize("spec, paths", [
    ("ppo:a.zip", ["a.zip"]),
    ("search(opponents=ppo:o.zip):ppo:b.zip", ["b.zip", "o.zip"]),
    ("search(opponents=ppo:b.zip,samples=4):ppo:b.zip", ["b.zip"]),
    ("search(opponents=ev):ppo:b.zip", ["b.zip"]),
    ("search(opponents=ppo:o.zip):ev", ["o.zip"]),
    ("search(critic=c.zip,opponents=ppo:o.zip):ppo:b.zip", ["b.zip", "o.zip", "c.zip"]),
    ("search(samples=x,opponents=ppo:o.zip):ev", []),  # options that do not parse
    ("ev", []),
])
def test_checkpoint_paths__the_base_and_the_opponents_files(spec, paths):
    assert checkpoint_paths(spec) == paths

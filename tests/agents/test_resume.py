"""Resume is the same run: a run killed (SIGKILL) and resumed ends exactly like one never
stopped; SIGTERM during the warm start stops cleanly with nothing to resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import yaml
from checkpoint_edits import (
    edit_arrays,
    edit_state,
    file_hashes,
    resume_checked,
    rewrite,
    train_tiny_run,
)
from run_logs import evaluations, scalars
from small_runs import WARM_STARTED_RUN

from agents.ppo.checkpoint import CheckpointError, load_policy, read_metadata
from agents.training.budgets import MAX_DATA_GAMES
from agents.training.config import TrainConfig
from agents.training.run_state import TRAINING_STATE_JSON, truncate_eval_log
from agents.training.start import prepare_start
from agents.training.trainer import train

ROOT = Path(__file__).resolve().parents[2]

# 6 rollouts of 16 x 64 steps: checkpoints at 2048 and 4096, an evaluation every rollout,
# a short warm start whose value-only rollouts straddle the first checkpoint, and
# snapshots from the first evaluation on (so "self" opponents play from the start), and an
# expert-iteration step at 3072 (between the checkpoints: a kill after it replays it)
RESUMABLE = dict(
    WARM_STARTED_RUN,
    total_timesteps=6144,
    checkpoint_interval=2048,
    value_warmup_rollouts=3,
    expert_interval=3072,
    expert_games=2,
    expert_search=("search(samples=2,depth=2,leaf=margin,top_actions=all,confidence_z=2,"
                   "verify_samples=0)"),
    progress=False,
)


def _train_command(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, str(ROOT / "train.py"), "--run-dir", str(run_dir), "--no-progress",
            *extra]


def _kill_after_a_lost_evaluation(process: subprocess.Popen, run_dir: Path) -> int:
    """SIGKILL ``process`` once it has evaluated past its last checkpoint (so the lost
    segment wrote evaluation lines and TensorBoard events); returns the checkpoint's steps."""
    last, log = run_dir / "checkpoints" / "last.zip", run_dir / "eval.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if last.exists() and log.exists():
            saved = read_metadata(last)["timesteps"]
            evaluated = [json.loads(line)["timesteps"] for line in log.read_text().splitlines()
                         if line.endswith("}")]
            if evaluated and evaluated[-1] > saved:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
                return saved
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"the run ended before it could be killed: {process.stderr.read()}")


@pytest.mark.slow  # subprocess training
def test_resume__killed_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    config_path = tmp_path / "resumable.yaml"
    config_path.write_text(yaml.safe_dump(RESUMABLE))
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    train(TrainConfig(**RESUMABLE), whole)

    process = subprocess.Popen(
        _train_command(killed, "--config", str(config_path)),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )
    saved = _kill_after_a_lost_evaluation(process, killed)
    assert 0 < saved < RESUMABLE["total_timesteps"]
    resumed = subprocess.run(_train_command(killed, "--resume"), capture_output=True, text=True,
                             cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr

    # the same evaluations, once each: the lost segment's lines were dropped and replayed
    assert evaluations(killed) == evaluations(whole)
    assert [e["timesteps"] for e in evaluations(killed)] == [1024, 2048, 3072, 4096, 5120, 6144]
    # the same final network, bit for bit
    final = {k: load_policy(d / "checkpoints" / "last.zip").state_dict() for k, d in
             (("whole", whole), ("killed", killed))}
    for name, tensor in final["whole"].items():
        assert torch.equal(tensor, final["killed"][name]), name
    # TensorBoard: no step logged twice, and the same curves (timing scalars aside)
    by_tag = scalars(killed)
    assert by_tag == scalars(whole)
    # the step at 3,072 is written with SB3's next dump, after that rollout
    assert [step for step, _ in by_tag["expert/agreement_after"]] == [4096]
    assert read_metadata(killed / "best.zip")["score"] == read_metadata(whole / "best.zip")["score"]


def _stderr_reader(process: subprocess.Popen) -> tuple[threading.Thread, list[str]]:
    """Read ``process``'s stderr character by character into a list, in a thread (the
    progress bar rewrites its line with carriage returns, never ending it)."""
    chunks: list[str] = []

    def read() -> None:
        while char := process.stderr.read(1):
            chunks.append(char)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, chunks


@pytest.mark.slow  # subprocess training
def test_resume__sigterm_during_warm_start_stops_cleanly_with_nothing_to_resume(tmp_path):
    config_path = tmp_path / "slow_warm_start.yaml"
    # a warm start of many minutes: the signal surely lands inside it
    config_path.write_text(yaml.safe_dump({**RESUMABLE, "imitation_games": MAX_DATA_GAMES,
                                           "progress": True}))
    run_dir = tmp_path / "run"
    # with its progress bar, so that the signal is sent once the warm start has begun (a
    # fixed wait can end during the imports on a loaded machine, or inside the first numba
    # compilation, where the handler's exception is swallowed: the run must stop anyway)
    command = [arg for arg in _train_command(run_dir, "--config", str(config_path))
               if arg != "--no-progress"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=tmp_path)
    reader, chunks = _stderr_reader(process)
    try:
        deadline = time.monotonic() + 120
        while "warm start: ev games" not in "".join(chunks):
            assert process.poll() is None and time.monotonic() < deadline, "".join(chunks)
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        process.kill()  # nothing when it has ended
    reader.join(timeout=10)
    stderr = "".join(chunks)
    assert process.returncode != 0
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.replace("\r", "\n").splitlines()
             if line.strip() and not line.startswith("warm start:")]
    assert len(lines) == 1, stderr  # the bar's lines aside
    assert "warm start" in lines[0] and "nothing to resume" in lines[0], stderr
    assert not (run_dir / "checkpoints").exists() and not (run_dir / "eval.jsonl").exists()
    again = subprocess.run(_train_command(run_dir, "--resume"), capture_output=True, text=True,
                           cwd=tmp_path, timeout=120)
    assert again.returncode == 2
    assert len(again.stderr.strip().splitlines()) == 1 and "nothing to resume" in again.stderr


@pytest.mark.slow  # training run
def test_train__a_stop_whose_exception_was_swallowed_still_ends_the_warm_start(
        tmp_path, monkeypatch):
    # a signal landing inside code that catches every exception (numba's compiler does)
    # loses the handler's exception: the warm start stops at the end of that chunk
    import agents.training.imitation as imitation
    from agents.training.warm_start import WarmStartInterrupted

    real_chunk = imitation.demonstration_chunk
    chunks = []

    def swallowing_chunk(*args):
        chunks.append(args)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)  # the handler runs and raises here
        except Exception:
            pass
        return real_chunk(*args)

    monkeypatch.setattr(imitation, "demonstration_chunk", swallowing_chunk)
    config = TrainConfig(**{**RESUMABLE, "imitation_games": 3 * imitation.DEMONSTRATION_CHUNK_GAMES})
    with pytest.raises(WarmStartInterrupted, match="stopped by SIGTERM during the imitation warm"):
        train(config, tmp_path / "run")
    assert len(chunks) == 1
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_train__a_stop_landing_in_a_finalizer_ends_the_warm_start_without_a_traceback(
        tmp_path, monkeypatch):
    # the handler's exception raised inside a __del__ (llvmlite's, while numba compiles)
    # cannot propagate: Python would print "Exception ignored in ..." and a traceback
    import agents.training.imitation as imitation
    from agents.training.warm_start import WarmStartInterrupted

    real_chunk = imitation.demonstration_chunk

    class SignalledWhileFinalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)  # the handler runs and raises here

    def chunk_with_a_finalizer(*args):
        SignalledWhileFinalized()  # dropped at once: its __del__ runs here
        return real_chunk(*args)

    monkeypatch.setattr(imitation, "demonstration_chunk", chunk_with_a_finalizer)
    # what Python would print as "Exception ignored in ..." (pytest's own hook would turn it
    # into a warning instead)
    printed = []
    monkeypatch.setattr(sys, "unraisablehook", printed.append)
    config = TrainConfig(**{**RESUMABLE, "imitation_games": 3 * imitation.DEMONSTRATION_CHUNK_GAMES})
    with pytest.raises(WarmStartInterrupted, match="stopped by SIGTERM during the imitation warm"):
        train(config, tmp_path / "run")
    assert printed == []
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_stops_raised_in_finalizers_kept_quiet__other_exceptions_still_reach_the_old_hook(
        monkeypatch):
    from agents.training.warm_start import (
        WarmStartInterrupted,
        stops_raised_in_finalizers_kept_quiet,
    )

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: reported.append(
        type(unraisable.exc_value)))

    class Raising:
        def __init__(self, error):
            self.error = error

        def __del__(self):
            raise self.error

    with stops_raised_in_finalizers_kept_quiet():
        Raising(WarmStartInterrupted.by("SIGTERM"))
        Raising(ValueError("a real bug"))
    Raising(WarmStartInterrupted.by("SIGINT"))  # outside: reported as before
    assert reported == [ValueError, WarmStartInterrupted]


def test_trainer_restore__a_checkpoint_without_training_state_is_a_clear_error(tmp_path):
    from agents.training.trainer import Trainer

    config = TrainConfig(**{**RESUMABLE, "total_timesteps": 1024, "imitation_games": 0,
                            "eval_interval": 0})
    train(config, tmp_path)
    last = tmp_path / "checkpoints" / "last.zip"
    import zipfile

    stripped = tmp_path / "stripped.zip"
    with zipfile.ZipFile(last) as source, zipfile.ZipFile(stripped, "w") as target:
        for item in source.namelist():
            if item != TRAINING_STATE_JSON:
                target.writestr(item, source.read(item))
    stripped.replace(last)
    with pytest.raises(CheckpointError, match="training_state.json"):
        Trainer(prepare_start(config, resume=True), tmp_path).run()


def test_truncate_eval_log__keeps_the_first_lines(tmp_path):
    log = tmp_path / "eval.jsonl"
    log.write_text('{"timesteps": 1}\n{"timesteps": 2}\n{"timesteps": 3}\n{"time')
    truncate_eval_log(log, 2)
    assert log.read_text() == '{"timesteps": 1}\n{"timesteps": 2}\n'


def test_trainer__sigterm_finishes_the_rollout_then_checkpoints_and_stops(tmp_path):
    from agents.training.trainer import Trainer

    config = TrainConfig(**{**RESUMABLE, "imitation_games": 0, "eval_interval": 0})
    trainer = Trainer(prepare_start(config), tmp_path)
    advance = trainer.advance_progress

    def terminate_once(timesteps: int) -> None:
        if timesteps == 1024 + 16 * 10:  # mid-way through the second rollout
            os.kill(os.getpid(), signal.SIGTERM)
        advance(timesteps)

    trainer.advance_progress = terminate_once
    before = signal.getsignal(signal.SIGTERM)
    summary = trainer.run()
    assert summary["interrupted"] and summary["timesteps"] == 2048
    assert read_metadata(tmp_path / "checkpoints" / "last.zip")["timesteps"] == 2048
    assert not (tmp_path / "eval.jsonl").exists()  # no final evaluation after a stop
    assert signal.getsignal(signal.SIGTERM) is before


def test_trainer_restore__another_n_envs_is_a_clear_error(tmp_path):
    from agents.training.trainer import Trainer

    config = TrainConfig(**{**RESUMABLE, "total_timesteps": 1024, "imitation_games": 0,
                            "eval_interval": 0})
    train(config, tmp_path)
    wider = TrainConfig(**{**RESUMABLE, "n_envs": 32, "imitation_games": 0})
    with pytest.raises(CheckpointError, match="holds 16 games.*n_envs=32"):
        Trainer(prepare_start(wider, resume=True), tmp_path).run()


# ------------------------------------------------------------------ damaged resume states (#34 A)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("tiny") / "run")


def _copy_run(tiny_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    return run


@pytest.mark.slow  # a train.py process
def test_train_cli__numpy_position_far_past_the_key_exits_2_with_one_line(tiny_run, tmp_path):
    # before: np.random.set_state took pos=10**8 and the process died with SIGSEGV
    run = _copy_run(tiny_run, tmp_path)
    edit_state(run / "checkpoints" / "last.zip",
               lambda state: {**state, "numpy_global": {**state["numpy_global"], "pos": 10**8}})
    before = file_hashes(run)
    # more steps than the run took, so that a resumed run would draw from the generator
    result = subprocess.run(_train_command(run, "--resume", "--total-timesteps", "256"),
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: checkpoint '{run / 'checkpoints' / 'last.zip'}': training_state.json field "
        "'numpy_global.pos' is 100000000: expected an int in 0..624"]
    assert file_hashes(run) == before


def _set(field: str, value):
    def change(state):
        *parents, last = field.split(".")
        target = state
        for key in parents:
            target = target[int(key) if isinstance(target, list) else key]
        target[int(last) if isinstance(target, list) else last] = value
        return state

    return change


def _drop_eval_log(run: Path) -> None:
    (run / "eval.jsonl").unlink()


@pytest.mark.parametrize("damage, message", [
    (lambda p: edit_state(p, _set("numpy_global.pos", 700)),
     "field 'numpy_global.pos' is 700: expected an int in 0..624"),
    (lambda p: edit_state(p, lambda state: [state]), "'training_state.json' is not a JSON object"),
    (lambda p: edit_state(p, lambda s: {k: v for k, v in s.items() if k != "n_updates"}),
     "field 'n_updates' is missing"),
    (lambda p: edit_state(p, _set("timesteps", "abc")), "field 'timesteps' is 'abc'"),
    (lambda p: edit_state(p, _set("timesteps", -5000)), "field 'timesteps' is -5000"),
    (lambda p: edit_state(p, _set("eval_lines", 0)),
     "field 'eval_lines' is 0 while 'last_eval_step' is 128"),
    (lambda p: edit_state(p, _set("snapshots", ["../../x"])),
     "field 'snapshots.0' is '../../x': expected a plain file name"),
    (lambda p: edit_state(p, _set("env.games.opponents.0", "../../x")),
     "snapshot name '../../x' is not a plain file name"),
    (lambda p: edit_state(p, _set("random_opponent_rng.state.state", 2**200)),
     "field 'random_opponent_rng' is wrong: .*ints in 0 .. 2\\*\\*128 - 1"),
    (lambda p: edit_arrays(p, lambda a: {**a, "last_obs": a["last_obs"][:2]}),
     "array 'last_obs' is float32 of shape \\(2, 108\\): expected float32 of shape \\(4, 108\\)"),
    (lambda p: edit_arrays(p, lambda a: {**a, "torch_rng": a["torch_rng"][:100]}),
     "array 'torch_rng' is uint8 of shape \\(100,\\)"),
    (lambda p: rewrite(p, {TRAINING_STATE_JSON: b"{}"}, resign=False),
     "member 'training_state.json' does not match the checksum"),
], ids=["pos_700", "list", "missing_key", "timesteps_abc", "timesteps_negative",
        "eval_lines_0", "snapshot_outside", "opponent_outside", "pcg64_overflow",
        "array_shape", "torch_rng_shape", "unsigned_edit"])
def test_restore_run__damaged_training_state_is_one_line_and_changes_nothing(
        tiny_run, tmp_path, damage, message):
    run = _copy_run(tiny_run, tmp_path)
    damage(run / "checkpoints" / "last.zip")
    before = file_hashes(run)
    with pytest.raises(CheckpointError, match=message) as caught:
        resume_checked(run)
    assert "\n" not in str(caught.value) and "last.zip" in str(caught.value)
    assert file_hashes(run) == before


@pytest.mark.parametrize("damage, message", [
    (_drop_eval_log, "eval.jsonl does not exist, but checkpoint .* records 1 evaluations"),
    (lambda run: (run / "eval.jsonl").write_text('{"timesteps": 64}\n'),
     "line 1 is not the evaluation at step 128"),
    (lambda run: (run / "eval.jsonl").write_text((run / "eval.jsonl").read_text()
                                                 + '{"timesteps": 64}\n'),
     "line 2 is not an evaluation from after the checkpoint"),
], ids=["missing", "foreign_line", "older_line_after"])
def test_restore_run__an_eval_log_the_run_did_not_write_is_refused(tiny_run, tmp_path, damage,
                                                                    message):
    # before: eval_lines silently cut whatever eval.jsonl held
    run = _copy_run(tiny_run, tmp_path)
    damage(run)
    before = file_hashes(run)
    with pytest.raises(CheckpointError, match=message):
        resume_checked(run)
    assert file_hashes(run) == before


def test_restore_run__lines_after_the_checkpoint_are_dropped(tiny_run, tmp_path):
    run = _copy_run(tiny_run, tmp_path)
    kept = (run / "eval.jsonl").read_text()
    (run / "eval.jsonl").write_text(kept + '{"timesteps": 160}\n{"timest')  # a kill mid-write
    assert resume_checked(run) == 128
    assert (run / "eval.jsonl").read_text() == kept


def test_restore_run__another_config_is_refused(tiny_run, tmp_path):
    # before: --resume with another --config continued the run under it without a word
    run = _copy_run(tiny_run, tmp_path)
    with pytest.raises(CheckpointError, match="written by another config: learning_rate="):
        resume_checked(run, learning_rate=1e-3)
    assert resume_checked(run, total_timesteps=512, torch_threads=2) == 128  # may change


def test_train_cli__full_disk_at_a_checkpoint_is_one_line_and_keeps_last_zip(
        tiny_run, tmp_path, monkeypatch, capsys):
    import errno
    import zipfile

    from agents.cli import train as train_cli

    run = _copy_run(tiny_run, tmp_path)
    last = run / "checkpoints" / "last.zip"
    before = last.read_bytes()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full)
    status = train_cli.main(["--resume", "--run-dir", str(run), "--total-timesteps", "256",
                             "--no-progress"])
    assert status == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert error.startswith("error: cannot write checkpoint ") and error.endswith(
        ": No space left on device")
    assert last.read_bytes() == before

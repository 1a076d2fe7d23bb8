"""Save and restore what a run continues from besides its weights and optimizer, so that
``train.py --resume`` continues the very same run.

``checkpoints/last.zip`` holds, beside the weights and the optimizer, everything the run
depends on (`TRAINING_STATE_JSON`, `TRAINING_STATE_ARRAYS`: every game of the env with its
random stream, learner seats and opponents, the env's, the random opponent's, numpy's and
torch's generators, the shaping potentials, evaluation and checkpoint schedules, best
scores, snapshots). A run killed at any moment and resumed writes the same ``eval.jsonl``
and ends with the same weights as a run never stopped; what the lost segment wrote is
removed (`truncate_eval_log`, `truncate_tensorboard`), and ``best.zip`` is never replaced
by a worse model.
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.atomic import atomic_path
from agents.ppo.checkpoint import (
    MAX_MEMBER_BYTES,
    ZIP_ERRORS,
    CheckpointError,
    DocumentCheck,
    check_compatible,
    is_plain_name,
    load_policy,
    parse_json_member,
    read_member,
    read_metadata,
    restore_model,
)
from agents.ppo.policy import PPOAgent
from agents.training.callbacks import pending_log_values
from skyjo_env.core.errors import one_line, shorten
from skyjo_env.learner_state import check_generator_state, state_layout

if TYPE_CHECKING:
    from agents.training.trainer import Trainer

#: Checkpoint member with the JSON part of the training state (see `export_run_state`).
TRAINING_STATE_JSON = "training_state.json"
#: Checkpoint member with the array part of the training state (an ``.npz``, no pickles).
TRAINING_STATE_ARRAYS = "training_state.npz"
TRAINING_STATE_VERSION = 2
#: Prefix of the env's arrays (`SkyjoVecEnv.export_state`) among the training state arrays.
_ENV_PREFIX = "env_"
#: Bounds on a training state, checked before it is parsed or applied.
MAX_STATE_JSON_BYTES = 16 << 20
MAX_STATE_ARRAYS = 64
MAX_SNAPSHOTS = 10_000
MAX_LOG_ITEMS = 10_000
#: Config keys a resumed run may change (how long it runs, how it shows progress, what
#: it runs on, what a new run would have started from); any other difference is refused.
RESUME_MAY_CHANGE = frozenset({"total_timesteps", "progress", "torch_threads", "data_workers",
                               "ray_address", "init_from"})
#: Words in numpy's legacy MT19937 key (its ``pos`` runs from 0 to this).
_MT19937_WORDS = 624
_ARRAY_NAME = re.compile(r"[A-Za-z0-9_]{1,100}")


def _finite_or_none(score: float) -> float | None:
    return None if math.isinf(score) else score


def _opponent_key(trainer: Trainer, agent) -> str:
    """The name of an agent the env's games may be using: the pool's heuristic kind, or
    the snapshot name."""
    for kind, heuristic in trainer.pool.heuristics.items():
        if agent is heuristic:
            return kind
    return agent.name


def export_run_state(
    trainer: Trainer, timesteps: int
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Everything besides weights and optimizer that ``trainer``'s run continues from.

    The env's games, generator and opponents come from `SkyjoVecEnv.export_state`.
    SB3 offers no public API for ``model._last_obs``, ``_last_episode_starts`` and
    ``_n_updates``, so those private fields are read directly.

    Returns:
        ``(JSON-able dict, {name: array})``.
    """
    import torch

    model = trainer.model
    env_state, env_arrays = trainer.vec_env.export_state(
        lambda agent: _opponent_key(trainer, agent)
    )
    # SB3 shuffles minibatches with the legacy global generator, so it is part of the run
    legacy = np.random.get_state(legacy=False)  # noqa: NPY002
    state = {
        "version": TRAINING_STATE_VERSION,
        "timesteps": int(timesteps),
        "n_updates": int(model._n_updates),
        "rollouts_done": trainer.rollouts_done,
        "warmup_rollouts": trainer.warmup_rollouts,
        "next_eval": trainer.next_eval,
        "next_checkpoint": trainer.next_checkpoint,
        "next_expert": trainer.next_expert,
        "last_eval_step": trainer.last_eval_step,
        "eval_lines": trainer.eval_lines,
        "best_score": _finite_or_none(trainer.best_score),
        "best_pool_score": _finite_or_none(trainer.best_pool_score),
        "snapshots": [agent.name for agent in trainer.pool.snapshots],
        "env": env_state,
        "random_opponent_rng": trainer.pool.heuristics["random"].rng.bit_generator.state,
        "numpy_global": {"pos": legacy["state"]["pos"], "has_gauss": legacy["has_gauss"],
                         "gauss": legacy["gauss"]},
        "monitor_episode_count": int(trainer.monitor.episode_count),
        "ep_info_buffer": [
            {"r": float(info["r"]), "l": int(info["l"]), "t": float(info["t"])}
            for info in (model.ep_info_buffer or [])
        ],
        "pending_log": (pending_log_values(model.logger)
                        if getattr(model, "_logger", None) is not None else {}),
        "imitation_stats": trainer.imitation_stats,
    }
    arrays = {_ENV_PREFIX + name: array for name, array in env_arrays.items()}
    arrays["last_obs"] = np.asarray(model._last_obs)
    arrays["last_episode_starts"] = np.asarray(model._last_episode_starts)
    arrays["monitor_returns"] = trainer.monitor.episode_returns
    arrays["monitor_lengths"] = trainer.monitor.episode_lengths
    arrays["torch_rng"] = torch.get_rng_state().numpy()
    arrays["numpy_global_key"] = legacy["state"]["key"]
    if trainer.shaping is not None:
        arrays["shaping_potential"] = trainer.shaping._potential
    return state, arrays


def run_state_members(state: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, bytes]:
    """The checkpoint members (name -> bytes) that hold `export_run_state`'s result (the
    checkpoint records their sha256, `agents.ppo.checkpoint.save_checkpoint`)."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return {TRAINING_STATE_JSON: json.dumps(state).encode(),
            TRAINING_STATE_ARRAYS: buffer.getvalue()}


def read_run_state(path: str | Path, metadata: dict[str, Any] | None = None
                   ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The run state stored in checkpoint ``path`` (`run_state_members`), read within
    bounds: both members verified against the checkpoint's checksums (format
    ``skyjo-rl-ppo/3``), the JSON at most `MAX_STATE_JSON_BYTES` and `MAX_JSON_DEPTH`
    deep, each array's header checked before its data is read (`read_state_arrays`). The
    fields are checked against a trainer by `check_run_state`.

    Args:
        path: The checkpoint.
        metadata: Its metadata when already read (`read_metadata`); read otherwise.

    Raises:
        CheckpointError: The checkpoint has no training state, or a damaged one (naming
            the file and member).
    """
    if metadata is None:
        metadata = read_metadata(path)
    content = read_member(path, TRAINING_STATE_JSON, metadata)
    if len(content) > MAX_STATE_JSON_BYTES:
        raise CheckpointError(f"checkpoint {str(path)!r}: member {TRAINING_STATE_JSON!r} is "
                              f"{len(content)} bytes, more than the {MAX_STATE_JSON_BYTES} allowed")
    state = parse_json_member(content, path, TRAINING_STATE_JSON)
    arrays = read_state_arrays(read_member(path, TRAINING_STATE_ARRAYS, metadata), path)
    return state, arrays


def read_state_arrays(content: bytes, path: str | Path = "<state>") -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` (`run_state_members`), without ``np.load``: each member's
    ``.npy`` header is read first and must give a plain dtype (bool, int, uint, float;
    never objects) and a shape whose size is exactly the bytes that follow, so a forged
    header cannot make us allocate more than the file holds.

    Returns:
        Name -> a writable array.

    Raises:
        CheckpointError: Naming the file, the member and the array.
    """
    where = f"checkpoint {str(path)!r}: member {TRAINING_STATE_ARRAYS!r}"
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except ZIP_ERRORS as error:
        raise CheckpointError(f"{where} is not an .npz archive ({one_line(error)})") from None
    arrays: dict[str, np.ndarray] = {}
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_STATE_ARRAYS:
            raise CheckpointError(f"{where} holds {len(infos)} arrays: at most "
                                  f"{MAX_STATE_ARRAYS} are read")
        total = 0
        for info in infos:
            name = info.filename.removesuffix(".npy")
            if not info.filename.endswith(".npy") or not _ARRAY_NAME.fullmatch(name) \
                    or name in arrays:
                raise CheckpointError(f"{where} holds an entry named "
                                      f"{shorten(repr(info.filename), 60)}: expected NAME.npy, "
                                      "each name once")
            total += info.file_size
            if total > MAX_MEMBER_BYTES:
                raise CheckpointError(f"{where} holds more than {MAX_MEMBER_BYTES} bytes")
            arrays[name] = _read_npy(archive, info, f"{where} array {name!r}")
    return arrays


def _read_npy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> np.ndarray:
    """One ``.npy`` entry of an ``.npz``, its header checked before its data is read."""
    from numpy.lib import format as npy

    try:
        with archive.open(info) as handle:
            version = npy.read_magic(handle)
            if version == (1, 0):
                shape, fortran, dtype = npy.read_array_header_1_0(handle)
            elif version == (2, 0):
                shape, fortran, dtype = npy.read_array_header_2_0(handle)
            else:
                raise ValueError(f"npy format version {version} is not read")
            if dtype.hasobject or dtype.kind not in "biuf" or dtype.subdtype is not None:
                raise ValueError(f"dtype {dtype} is not a plain number type")
            if any(type(n) is not int or n < 0 for n in shape):
                raise ValueError(f"shape {shape} is not a shape")
            size = math.prod(shape) * dtype.itemsize
            if size != info.file_size - handle.tell():
                raise ValueError(f"its header's shape {shape} and dtype {dtype} need {size} "
                                 f"bytes; it holds {info.file_size - handle.tell()}")
            data = handle.read(size)
    except ZIP_ERRORS as error:  # numpy's header errors are ValueErrors
        raise CheckpointError(f"{where} is damaged: {one_line(error)}") from None
    array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    if dtype.kind == "b" and np.any(array.view(np.uint8) > 1):
        raise CheckpointError(f"{where} is damaged: a bool array holds bytes other than 0 and 1")
    return array.copy()


def _snapshot_agent(trainer: Trainer, name: str) -> PPOAgent:
    """The pool snapshot ``name`` from the run's ``snapshots`` directory: a plain file
    name (`is_plain_name`) whose file, links resolved, lies inside that directory."""
    folder = trainer.run_dir / "snapshots"
    if not is_plain_name(name):
        raise CheckpointError(f"checkpoint {str(trainer.last_checkpoint)!r}: snapshot name "
                              f"{shorten(repr(name), 60)} is not a plain file name")
    path = folder / f"{name}.zip"
    if path.resolve().parent != folder.resolve():
        raise CheckpointError(f"checkpoint {str(trainer.last_checkpoint)!r}: snapshot {name!r} "
                              f"leads outside {folder} ({path} -> {path.resolve()})")
    policy = load_policy(path)
    policy.set_training_mode(False)
    return PPOAgent(policy, name=name)


def _check_state_fits(trainer: Trainer, state: dict[str, Any]) -> None:
    """Refuse a training state of another version, or of another number of games."""
    where = f"checkpoint {str(trainer.last_checkpoint)!r}"
    if state.get("version") != TRAINING_STATE_VERSION:
        raise CheckpointError(
            f"{where} has training state version {shorten(repr(state.get('version')), 60)}; "
            f"this skyjo-rl resumes version {TRAINING_STATE_VERSION}"
        )
    try:
        saved_games = state.get("env")["games"]["num_games"]
    except (KeyError, TypeError):
        saved_games = None  # import_state names what is missing
    if saved_games is not None and saved_games != trainer.config.n_envs:
        raise CheckpointError(
            f"{where} holds {shorten(repr(saved_games), 60)} games; this config has "
            f"n_envs={trainer.config.n_envs}: resume with the run's own config"
        )


def check_run_state(trainer: Trainer, state: Any, arrays: dict[str, np.ndarray],
                    metadata: dict[str, Any]) -> None:
    """Check every field of a training state against its schema and ``trainer`` (built
    env, not yet a model) before anything is built from it or applied: types, bounds,
    required keys, the generators' states (numpy's MT19937 position, torch's state on a
    generator of its own, PCG64 states), snapshot names, and every array's name, shape
    and dtype. The env's games are checked by ``SkyjoVecEnv.import_state`` (which changes
    nothing until all is checked).

    Args:
        trainer: The trainer to resume (its env built: `Trainer.build_env`).
        state: The JSON part (`read_run_state`).
        arrays: The arrays.
        metadata: The checkpoint's metadata (its ``timesteps`` must be the state's).

    Raises:
        CheckpointError: One line naming the checkpoint, the member and the field or array.
    """
    path = trainer.last_checkpoint
    check = DocumentCheck(path, TRAINING_STATE_JSON)
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {str(path)!r}: member {TRAINING_STATE_JSON!r} is not "
                              "a JSON object")
    _check_state_fits(trainer, state)
    timesteps = check.integer(check.entry(state, "timesteps"), "timesteps")
    if timesteps != metadata["timesteps"]:
        raise check.error("timesteps", f"is {timesteps}; the checkpoint's metadata records "
                                       f"{metadata['timesteps']}")
    for key in ("n_updates", "rollouts_done", "warmup_rollouts", "next_eval", "next_checkpoint",
                "monitor_episode_count", "eval_lines"):
        check.integer(check.entry(state, key), key)
    if "next_expert" in state:  # checkpoints from before expert iteration have none
        check.integer(state["next_expert"], "next_expert")
    if check.entry(state, "last_eval_step") is not None:
        check.integer(state["last_eval_step"], "last_eval_step", 0, timesteps)
    for key in ("best_score", "best_pool_score"):  # win rates
        check.optional_number(check.entry(state, key), key, 0.0, 1.0)
    snapshots = check.array(check.entry(state, "snapshots"), "snapshots", MAX_SNAPSHOTS)
    for index, name in enumerate(snapshots):
        if not is_plain_name(name) or snapshots.index(name) != index:
            raise check.bad(f"snapshots.{index}", name, "a plain file name, each once")
    check.mapping(check.entry(state, "env"), "env")
    try:
        check_generator_state(check.entry(state, "random_opponent_rng"), "random_opponent_rng")
    except ValueError as error:
        raise check.error("random_opponent_rng", f"is wrong: {error}") from None
    _check_numpy_global(check, state)
    _check_logged_values(check, state)
    _check_arrays(trainer, arrays, path)


def _check_numpy_global(check: DocumentCheck, state: dict[str, Any]) -> None:
    """numpy's legacy MT19937 state: ``np.random.set_state`` does not bound ``pos``
    (10**8 crashes the process, 700 reads memory past the key)."""
    numpy_global = check.mapping(check.entry(state, "numpy_global"), "numpy_global")
    check.integer(check.entry(numpy_global, "pos", "numpy_global.pos"), "numpy_global.pos", 0,
                  _MT19937_WORDS)
    check.integer(check.entry(numpy_global, "has_gauss", "numpy_global.has_gauss"),
                  "numpy_global.has_gauss", 0, 1)
    check.number(check.entry(numpy_global, "gauss", "numpy_global.gauss"), "numpy_global.gauss")


def _check_logged_values(check: DocumentCheck, state: dict[str, Any]) -> None:
    """The episode infos, the logger values waiting for their dump, the imitation figures."""
    episodes = check.array(check.entry(state, "ep_info_buffer"), "ep_info_buffer", MAX_LOG_ITEMS)
    for index, info in enumerate(episodes):
        field = f"ep_info_buffer.{index}"
        check.mapping(info, field)
        check.number(check.entry(info, "r", f"{field}.r"), f"{field}.r")
        check.integer(check.entry(info, "l", f"{field}.l"), f"{field}.l", 0, 2**31 - 1)
        check.number(check.entry(info, "t", f"{field}.t"), f"{field}.t", 0.0)
    pending = check.mapping(check.entry(state, "pending_log"), "pending_log")
    for key, entry in _bounded_items(check, pending, "pending_log"):
        field = f"pending_log.{key}"
        if not (isinstance(entry, list) and len(entry) == 3):
            raise check.bad(field, entry, "[value, count, excluded]")
        check.number(entry[0], f"{field}.0", finite=False)  # a loss may be NaN: it is logged
        check.integer(entry[1], f"{field}.1", 0, 2**31 - 1)
        if entry[2] is not None and not (isinstance(entry[2], list) and len(entry[2]) <= 8 and all(
                isinstance(item, str) and len(item) <= 40 for item in entry[2])):
            raise check.bad(f"{field}.2", entry[2], "null or a list of output format names")
    stats = check.mapping(check.entry(state, "imitation_stats"), "imitation_stats")
    for key, value in _bounded_items(check, stats, "imitation_stats"):
        check.number(value, f"imitation_stats.{key}", finite=False)


def _bounded_items(check: DocumentCheck, mapping: dict[str, Any], field: str):
    """The items of a JSON object of at most `MAX_LOG_ITEMS` short keys."""
    if len(mapping) > MAX_LOG_ITEMS or any(len(key) > 200 for key in mapping):
        raise check.bad(field, f"{len(mapping)} entries", f"at most {MAX_LOG_ITEMS} entries, "
                        "keys of at most 200 characters")
    return mapping.items()


def _expected_arrays(trainer: Trainer) -> dict[str, tuple[tuple[int, ...], Any]]:
    """Name -> (shape, dtype or tuple of allowed dtypes) of every array `export_run_state`
    writes for ``trainer`` (the env's under their `_ENV_PREFIX`)."""
    import torch

    n_envs = trainer.vec_env.num_envs
    expected = {_ENV_PREFIX + name: layout
                for name, layout in state_layout(trainer.vec_env.games).items()}
    expected.update({
        "last_obs": ((n_envs, *trainer.vec_env.observation_space.shape), np.dtype(np.float32)),
        "last_episode_starts": ((n_envs,), np.dtype(bool)),
        "monitor_returns": (trainer.monitor.episode_returns.shape,
                            trainer.monitor.episode_returns.dtype),
        "monitor_lengths": (trainer.monitor.episode_lengths.shape,
                            trainer.monitor.episode_lengths.dtype),
        "torch_rng": (tuple(torch.get_rng_state().shape), np.dtype(np.uint8)),
        "numpy_global_key": ((_MT19937_WORDS,), np.dtype(np.uint32)),
    })
    if trainer.shaping is not None:
        # float64 zeros before the first reset, then what grid_potential gives (float32)
        expected["shaping_potential"] = ((n_envs,), (np.dtype(np.float32), np.dtype(np.float64)))
    return expected


def _check_arrays(trainer: Trainer, arrays: dict[str, np.ndarray], path: Path) -> None:
    """Every array present, of its shape and dtype, none unknown; the floats finite, the
    counts >= 0, torch's generator state one torch accepts."""
    import torch

    where = f"checkpoint {str(path)!r}: member {TRAINING_STATE_ARRAYS!r}"
    expected = _expected_arrays(trainer)
    unknown = sorted(set(arrays) - set(expected))
    if unknown:
        raise CheckpointError(f"{where} holds unknown arrays {unknown[:3]}")
    for name, (shape, dtype) in expected.items():
        if name not in arrays:
            raise CheckpointError(f"{where} has no array {name!r}")
        array = arrays[name]
        dtypes = dtype if isinstance(dtype, tuple) else (dtype,)
        if array.shape != tuple(shape) or array.dtype not in dtypes:
            raise CheckpointError(f"{where} array {name!r} is {array.dtype} of shape "
                                  f"{array.shape}: expected {' or '.join(map(str, dtypes))} "
                                  f"of shape {tuple(shape)}")
    for name in ("last_obs", "monitor_returns", "shaping_potential"):
        if name in arrays and not np.all(np.isfinite(arrays[name])):
            raise CheckpointError(f"{where} array {name!r} holds non-finite values")
    if np.any(arrays["monitor_lengths"] < 0):
        raise CheckpointError(f"{where} array 'monitor_lengths' holds negative lengths")
    try:  # torch checks the state fully, on a generator of its own
        torch.Generator().set_state(torch.from_numpy(arrays["torch_rng"].copy()))
    except (RuntimeError, ValueError, TypeError) as error:
        raise CheckpointError(f"{where} array 'torch_rng' is not a torch generator state "
                              f"({one_line(error)})") from None


def check_eval_log(eval_log: Path, state: dict[str, Any], path: Path) -> None:
    """Refuse to resume when ``eval.jsonl`` is not the log the checkpoint's run wrote.

    The checkpoint records how many evaluation lines were written (``eval_lines``) and
    the step of the last (``last_eval_step``); a resume drops the lines after them
    (`truncate_eval_log`), which the run writes again. That is right only when the kept
    lines end with that evaluation and the dropped ones are evaluations from after it, at
    the checkpoint's step or later (the last may be cut short by a kill). Any other log
    (fewer lines, a missing file while lines are recorded, other evaluations) would be cut
    silently or continued with wrong line counts, so it is refused.

    Raises:
        CheckpointError: One line naming the log, the checkpoint and ``eval_lines``.
    """
    recorded, timesteps = state["eval_lines"], state["timesteps"]
    last_step = state["last_eval_step"]
    lines = eval_log.read_bytes().splitlines(keepends=True) if eval_log.is_file() else []

    def refuse(problem: str) -> CheckpointError:
        return CheckpointError(
            f"cannot resume: {eval_log} {problem}, but checkpoint {str(path)!r} field "
            f"'eval_lines' records {recorded} evaluations (the last at step {last_step}); the "
            "log was changed after the checkpoint: restore it, or start a new run from this "
            "network (--init-from)"
        )

    if (recorded == 0) != (last_step is None):
        raise DocumentCheck(path, TRAINING_STATE_JSON).error(
            "eval_lines", f"is {recorded} while 'last_eval_step' is {last_step!r}")
    if len(lines) < recorded:
        raise refuse("does not exist" if not eval_log.is_file() else f"has {len(lines)} lines")
    for number, line in enumerate(lines, start=1):
        step = _logged_step(line)
        torn = number == len(lines) and not line.endswith(b"\n")  # a write cut by a kill
        if number == recorded and step != last_step:
            raise refuse(f"line {number} is not the evaluation at step {last_step}")
        if number > recorded and not torn and (
                step is None or step < timesteps or (last_step is not None and step <= last_step)):
            raise refuse(f"line {number} is not an evaluation from after the checkpoint")


def _logged_step(line: bytes) -> int | None:
    """The ``timesteps`` of an ``eval.jsonl`` line (None when it is not one)."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    step = entry.get("timesteps") if isinstance(entry, dict) else None
    return step if type(step) is int else None


def check_same_config(metadata: dict[str, Any], config, path: Path) -> None:
    """Refuse to resume a checkpoint under another config than the one it was written
    with (other than in `RESUME_MAY_CHANGE`): a resumed run is the same run, and a config
    passed with ``--resume`` (or a run directory of another run) would otherwise be
    adopted silently. Keys that only one side has (config fields added or removed since)
    are not compared.

    Raises:
        CheckpointError: Naming the checkpoint and up to three differing keys.
    """
    saved = metadata.get("config")
    if not isinstance(saved, dict):
        return  # written by a tool, not a training run: nothing to compare
    differing = config_differences(saved, config.to_dict(), RESUME_MAY_CHANGE)
    if differing:
        raise CheckpointError(
            f"checkpoint {str(path)!r} was written by another config: "
            f"{differing}; resume with the run's own config (leave out "
            "--config) or start a new run from this network (--init-from)"
        )


def config_differences(saved: dict[str, Any], current: dict[str, Any],
                       may_change: frozenset[str]) -> str | None:
    """Up to three keys that both config dicts have, outside ``may_change``, whose values
    differ, as ``key=SAVED (this config: CURRENT)`` (plus ``and N more``); None when
    there are none. Keys that only one side has (config fields added or removed since)
    are not compared."""
    current = json.loads(json.dumps(current))  # tuples and the like as the saved JSON has them
    differing = [f"{key}={shorten(repr(saved[key]), 40)} (this config: "
                 f"{shorten(repr(current[key]), 40)})"
                 for key in sorted(saved.keys() & current.keys())
                 if key not in may_change and saved[key] != current[key]]
    if not differing:
        return None
    more = f" and {len(differing) - 3} more" if len(differing) > 3 else ""
    return f"{', '.join(differing[:3])}{more}"


def _restore_env(trainer: Trainer, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """The env's games and opponents (snapshots loaded from the run's directory), the
    random opponent's generator, the monitor and the shaping."""
    loaded = {}
    for name in state["snapshots"]:
        loaded[name] = _snapshot_agent(trainer, name)
        trainer.pool.add_snapshot(loaded[name])

    def agent(key: str):
        if key in trainer.pool.heuristics:
            return trainer.pool.heuristics[key]
        if key not in loaded:  # a snapshot that left the pool but still plays a game
            loaded[key] = _snapshot_agent(trainer, key)
        return loaded[key]

    env_arrays = {name[len(_ENV_PREFIX):]: array for name, array in arrays.items()
                  if name.startswith(_ENV_PREFIX)}
    try:
        trainer.vec_env.import_state(state.get("env"), env_arrays, agent)
    except CheckpointError:
        raise  # a snapshot that could not be loaded, already named
    except ValueError as error:
        raise CheckpointError(
            f"checkpoint {str(trainer.last_checkpoint)!r} has a damaged env state: {error}"
        ) from error
    trainer.pool.heuristics["random"].rng.bit_generator.state = state["random_opponent_rng"]
    trainer.monitor.episode_returns[...] = arrays["monitor_returns"]
    trainer.monitor.episode_lengths[...] = arrays["monitor_lengths"]
    trainer.monitor.episode_count = int(state["monitor_episode_count"])
    if trainer.shaping is not None:
        trainer.shaping._potential = arrays["shaping_potential"].copy()


def _restore_model_internals(model, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """The MaskablePPO's step count, update count, last observations and episode infos."""
    model.num_timesteps = int(state["timesteps"])
    model._n_updates = int(state["n_updates"])
    model._last_obs = arrays["last_obs"].copy()
    model._last_episode_starts = arrays["last_episode_starts"].copy()
    model.ep_info_buffer = deque(
        ({"r": np.float32(i["r"]), "l": np.int32(i["l"]), "t": i["t"]}
         for i in state["ep_info_buffer"]),
        maxlen=model._stats_window_size,
    )
    model.ep_success_buffer = deque(maxlen=model._stats_window_size)


def _restore_schedule(trainer: Trainer, state: dict[str, Any]) -> None:
    """The trainer's counters, schedules and best scores."""
    trainer.pending_log = state["pending_log"]
    trainer.rollouts_done = int(state["rollouts_done"])
    trainer.warmup_rollouts = int(state["warmup_rollouts"])
    trainer.next_eval = int(state["next_eval"])
    trainer.next_checkpoint = int(state["next_checkpoint"])
    # checkpoints from before expert iteration existed hold no schedule for it
    trainer.next_expert = int(state.get("next_expert", trainer.config.expert_interval))
    trainer.last_eval_step = state["last_eval_step"]
    trainer.eval_lines = int(state["eval_lines"])
    trainer.imitation_stats = state["imitation_stats"]
    if state["best_score"] is not None:
        trainer.best_score = float(state["best_score"])
    if state["best_pool_score"] is not None:
        trainer.best_pool_score = float(state["best_pool_score"])


def _restore_global_generators(state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """numpy's legacy global generator (SB3 shuffles minibatches with it) and torch's."""
    import torch

    numpy_global = state["numpy_global"]
    np.random.set_state({  # noqa: NPY002 (see export_run_state)
        "bit_generator": "MT19937",
        "state": {"key": arrays["numpy_global_key"], "pos": numpy_global["pos"]},
        "has_gauss": numpy_global["has_gauss"], "gauss": numpy_global["gauss"],
    })
    torch.set_rng_state(torch.from_numpy(arrays["torch_rng"].copy()))


def import_run_state(
    trainer: Trainer, state: dict[str, Any], arrays: dict[str, np.ndarray]
) -> None:
    """Put `export_run_state` back into a freshly built model, env and trainer; the state
    passed `check_run_state`.

    Raises:
        CheckpointError: A damaged env state or a snapshot that does not load.
    """
    _restore_env(trainer, state, arrays)
    _restore_model_internals(trainer.model, state, arrays)
    _restore_schedule(trainer, state)
    _restore_global_generators(state, arrays)


def best_saved_score(path: Path) -> float:
    """The score recorded in a best.zip (-inf when there is none readable)."""
    try:
        score = read_metadata(path).get("score")
    except CheckpointError:
        return -math.inf
    return -math.inf if score is None else float(score)


def restore_run(trainer: Trainer) -> int:
    """Continue ``trainer``'s run from its last checkpoint; returns its step count.

    First everything the checkpoint carries is checked, before anything is built or
    applied: the checkpoint (`read_metadata`: sizes, schema, checksums), its rules, the
    training state (`read_run_state`, `check_run_state`), the config it was written with
    (`check_same_config`) and the evaluation log (`check_eval_log`). Then it builds the
    model afresh, loads the weights and optimizer into it, then the run state
    (`import_run_state`); drops what the run wrote after that checkpoint (evaluation lines,
    TensorBoard events), and keeps the better of the checkpoint's best score and
    best.zip's own, so best.zip never goes back to a worse model.

    Raises:
        CheckpointError: A missing, corrupt, damaged or incompatible checkpoint, one
            without a training state, another config, or an evaluation log it did not
            write (one line naming the file and the field).
    """
    path = trainer.last_checkpoint
    metadata = read_metadata(path)
    check_compatible(metadata, trainer.rules, path)
    state, arrays = read_run_state(path, metadata)
    check_run_state(trainer, state, arrays, metadata)
    check_same_config(metadata, trainer.config, path)
    check_eval_log(trainer.eval_log, state, path)
    trainer.model = trainer.build_model()
    restore_model(path, trainer.model, metadata)
    import_run_state(trainer, state, arrays)
    done = int(state["timesteps"])
    trainer.best_score = max(trainer.best_score, best_saved_score(trainer.best_checkpoint))
    truncate_eval_log(trainer.eval_log, trainer.eval_lines)
    if (trainer.run_dir / "tb").is_dir():
        truncate_tensorboard(trainer.run_dir / "tb", done)
    return done


# ---------------------------------------------------------------- what the lost segment wrote


def truncate_eval_log(path: Path, lines: int) -> None:
    """Keep the first ``lines`` lines of ``path`` (an ``eval.jsonl``), atomically.

    The lines after them were written after the checkpoint a resumed run starts from; the
    resumed run writes them again.
    """
    if not path.is_file():
        return
    kept = path.read_text().splitlines(keepends=True)[:lines]
    with atomic_path(path) as temporary:
        temporary.write_text("".join(kept))


def truncate_tensorboard(tb_dir: Path, timesteps: int) -> int:
    """Drop every TensorBoard event logged at a step after ``timesteps``, atomically per file.

    SB3 logs at a step once its rollout is collected, before the checkpoint at that step is
    taken, so the events after ``timesteps`` are exactly those of the segment a resumed run
    replays. Each event file is rewritten under its own name (TensorBoard orders files by
    name, and the resumed run's file sorts after it). A record cut short by a kill ends
    the file's reading.

    Returns:
        The number of events dropped.
    """
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    dropped = 0
    for path in sorted(tb_dir.rglob("events.out.tfevents*")):
        records = list(RawEventFileLoader(str(path)).Load())
        kept = [r for r in records if event_pb2.Event.FromString(r).step <= timesteps]
        if len(kept) == len(records):
            continue
        dropped += len(records) - len(kept)
        with atomic_path(path) as temporary, open(temporary, "wb") as handle:
            writer = RecordWriter(handle)
            for record in kept:
                writer.write(record)
    return dropped

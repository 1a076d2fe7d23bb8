"""The search space of a sweep: `load_sweep_space` reads and checks a space YAML file.

A space file::

    base_config: ../default.yaml     # optional: a training config, relative to this file
    base:                            # optional: TrainConfig keys over it (tiny budgets...)
      total_timesteps: 200000
      imitation_games: 0
    objective:                       # optional (these are the defaults)
      metric: best_score             # best_score (best evaluation) or final_score (last one)
      direction: maximize            # maximize or minimize
    pruner:                          # optional (the default): stop trials that trail
      type: median                   # median (n_startup_trials, n_warmup_steps),
      n_startup_trials: 2            # threshold (lower and/or upper), or none
    params:                          # TrainConfig key -> distribution (at least one)
      learning_rate: {type: float, low: 1.0e-4, high: 1.0e-3, log: true}
      n_epochs: {type: int, low: 1, high: 4}
      net_arch: {type: categorical, choices: [[64, 64], [128, 128]]}

The score is the trainer's evaluation score: the mean win rate against ``eval_opponents``.
Every mistake is a `SweepSpaceError`, one line naming the key (``params.n_epochs.low``).
Values are checked against their field's type and bounds here; combinations
(``batch_size <= n_envs * n_steps``, rules and num_players) are checked per trial, and a
trial whose sampled config is invalid is recorded as failed with the one-line error.

This module does not import optuna or ray; `ParamSpace.distribution` imports optuna.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agents.training.config import TrainConfig, TrainConfigError, allowed_values, read_config_file
from skyjo_env.core.errors import shorten
from skyjo_env.core.safe_yaml import show_path

SPACE_KEYS = ("base_config", "base", "objective", "pruner", "params")
METRICS = ("best_score", "final_score")
DIRECTIONS = ("maximize", "minimize")
DISTRIBUTION_KEYS = {
    "float": ("type", "low", "high", "log", "step"),
    "int": ("type", "low", "high", "log", "step"),
    "categorical": ("type", "choices"),
}
#: Pruner type -> its optional keys and their defaults.
PRUNER_KEYS: dict[str, dict[str, Any]] = {
    "median": {"n_startup_trials": 2, "n_warmup_steps": 0},
    "threshold": {"lower": None, "upper": None},
    "none": {},
}


#: The most characters of a value (or key) that a message repeats.
VALUE_CHARS = 80


class SweepSpaceError(ValueError):
    """A bad sweep space: one line naming the file and the key."""

    def __init__(self, message: str):
        super().__init__(shorten(str(message), 2000))  # always one line, bounded


def _show(value: Any) -> str:
    """``repr(value)`` for a message, at most `VALUE_CHARS` characters."""
    return shorten(repr(value), VALUE_CHARS)


@dataclass(frozen=True)
class ParamSpace:
    """The distribution of one `TrainConfig` field.

    Attributes:
        name: the `TrainConfig` field.
        kind: ``float``, ``int`` or ``categorical``.
        low, high, log, step: the range (``float`` and ``int``).
        choices: the values (``categorical``), as the config takes them.
    """

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    def labels(self) -> list[Any]:
        """Categorical choices as Optuna stores them: scalars as they are, lists and
        mappings (``net_arch``, ``opponent_mix``) as JSON text (Optuna takes only scalars)."""
        return [c if _is_scalar(c) else json.dumps(c) for c in self.choices]

    def decode(self, value: Any) -> Any:
        """The config value of what Optuna sampled (a label back to its choice)."""
        if self.kind == "categorical":
            return self.choices[self.labels().index(value)]
        return value

    def distribution(self):
        """The Optuna distribution (imports optuna)."""
        from optuna.distributions import (
            CategoricalDistribution,
            FloatDistribution,
            IntDistribution,
        )

        if self.kind == "categorical":
            return CategoricalDistribution(self.labels())
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log,
                                   step=int(self.step or 1))
        return FloatDistribution(self.low, self.high, log=self.log, step=self.step)


@dataclass(frozen=True)
class SweepSpace:
    """A checked space file (see the module docstring).

    Attributes:
        path: the file.
        base: the base `TrainConfig` data (the base config file, then ``base``).
        metric: ``best_score`` or ``final_score``.
        direction: ``maximize`` or ``minimize``.
        pruner: ``{"type": ..., option: value}`` with defaults filled in.
        params: the distributions, in file order.
    """

    path: Path
    base: dict[str, Any]
    metric: str = "best_score"
    direction: str = "maximize"
    pruner: dict[str, Any] = field(default_factory=lambda: {"type": "median",
                                                             **PRUNER_KEYS["median"]})
    params: tuple[ParamSpace, ...] = ()

    def base_config(self) -> TrainConfig:
        """The base `TrainConfig` (checked when the space was loaded)."""
        return TrainConfig.from_dict(dict(self.base))

    def trial_config(self, values: dict[str, Any], seed: int) -> TrainConfig:
        """The config of one trial: the base, the sampled ``values`` (config values, see
        `ParamSpace.decode`), ``seed`` unless ``seed`` is swept, and no progress bar.

        Raises:
            TrainConfigError: the combination is not a valid config.
        """
        data = {**self.base, "seed": seed, **values, "progress": False}
        return TrainConfig.from_dict(data)


def load_sweep_space(path: str | Path) -> SweepSpace:
    """Read and check a space file.

    Raises:
        SweepSpaceError: the file is missing or not a YAML mapping, has an unknown key, a
            bad objective or pruner, an unknown `TrainConfig` field, a bad distribution, or
            a value its field does not allow (one line naming the key).
    """
    path = Path(path)
    try:
        data = read_config_file(path)
    except TrainConfigError as error:
        raise SweepSpaceError(str(error).replace("training config", "sweep space", 1)) from None
    where = f"sweep space {show_path(path)}"
    _refuse_unknown(data, SPACE_KEYS, where, "key")
    base = _read_base(data, path, where)
    objective = _mapping(data.get("objective", {}), f"{where} key 'objective'")
    _refuse_unknown(objective, ("metric", "direction"), where, "key in 'objective'")
    metric = _one_of(objective.get("metric", "best_score"), METRICS, f"{where} key "
                     "'objective.metric'")
    direction = _one_of(objective.get("direction", "maximize"), DIRECTIONS,
                        f"{where} key 'objective.direction'")
    pruner = _read_pruner(data.get("pruner", {"type": "median"}), where)
    raw_params = _mapping(data.get("params"), f"{where} key 'params'")
    if not raw_params:
        raise SweepSpaceError(f"{where} key 'params': expected at least one TrainConfig key "
                              "with its distribution")
    swept = set(raw_params)
    params = tuple(_read_param(name, spec, base, where, swept) for name, spec in raw_params.items())
    return SweepSpace(path=path, base=base, metric=metric, direction=direction, pruner=pruner,
                      params=params)


# --- parts ---------------------------------------------------------------------------


def _read_base(data: dict[str, Any], path: Path, where: str) -> dict[str, Any]:
    base: dict[str, Any] = {}
    if data.get("base_config") is not None:
        name = data["base_config"]
        if not isinstance(name, str) or not name:
            raise SweepSpaceError(f"{where} key 'base_config': got {_show(name)}, expected the "
                                  "path of a training config YAML file (relative to the space file)")
        try:
            base = read_config_file(path.parent / name)
        except TrainConfigError as error:
            raise SweepSpaceError(f"{where} key 'base_config': {error}") from None
    base.update(_mapping(data.get("base", {}), f"{where} key 'base'"))
    try:
        return TrainConfig.from_dict(base).to_dict()
    except TrainConfigError as error:
        raise SweepSpaceError(f"{where} base config: {error}") from None


def _read_pruner(spec: Any, where: str) -> dict[str, Any]:
    spec = dict(_mapping(spec, f"{where} key 'pruner'"))
    kind = _one_of(spec.pop("type", "median"), tuple(PRUNER_KEYS), f"{where} key 'pruner.type'")
    _refuse_unknown(spec, tuple(PRUNER_KEYS[kind]), where, f"key in 'pruner' (type {kind})")
    options = {**PRUNER_KEYS[kind], **spec}
    for key, value in options.items():
        name = f"{where} key 'pruner.{key}'"
        if kind == "median" and not _is_int(value, minimum=0):
            raise SweepSpaceError(f"{name}: got {_show(value)}, expected an integer >= 0")
        if kind == "threshold" and value is not None and not _is_number(value):
            raise SweepSpaceError(f"{name}: got {_show(value)}, expected a number")
    if kind == "threshold" and options["lower"] is None and options["upper"] is None:
        raise SweepSpaceError(f"{where} key 'pruner': a threshold pruner needs 'lower' or "
                              "'upper' (the score a trial must stay within)")
    return {"type": kind, **options}


def _read_param(name: Any, spec: Any, base: dict[str, Any], where: str,
                swept: set[str]) -> ParamSpace:
    known = [key for key in TrainConfig.model_fields if key != "progress"]
    if name not in known:
        close = difflib.get_close_matches(str(name), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SweepSpaceError(f"{where} key 'params': unknown TrainConfig key {_show(name)}{hint}; "
                              f"known keys: {', '.join(known)}")
    key = f"{where} key 'params.{name}'"
    spec = _mapping(spec, key)
    kind = _one_of(spec.get("type"), tuple(DISTRIBUTION_KEYS), f"{where} key 'params.{name}.type'")
    _refuse_unknown(spec, DISTRIBUTION_KEYS[kind], where, f"key in 'params.{name}' (type {kind})")
    annotation = TrainConfig.model_fields[name].annotation
    if kind == "categorical":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise SweepSpaceError(f"{where} key 'params.{name}.choices': got {_show(choices)}, "
                                  "expected a non-empty list of values")
        for index, choice in enumerate(choices):
            if not _is_plain(choice):
                raise SweepSpaceError(
                    f"{where} key 'params.{name}.choices[{index}]': got a "
                    f"{type(choice).__name__}, expected plain data (a number, string, "
                    "boolean, null, or a list or mapping of them)")
        param = ParamSpace(name, kind, choices=tuple(choices))
        if len(set(param_labels := param.labels())) != len(param_labels):
            raise SweepSpaceError(f"{where} key 'params.{name}.choices': a choice is repeated")
        for index, choice in enumerate(choices):
            _check_value(name, choice, base, swept,
                         f"{where} key 'params.{name}.choices[{index}]'")
        return param
    if annotation not in (int, float) or (kind == "float" and annotation is int):
        expected = "int" if annotation is int else "categorical"
        raise SweepSpaceError(f"{key}: a {kind} distribution does not suit {_show(name)} "
                              f"({allowed_values(name)}); use type {expected}")
    return _read_range(name, kind, spec, base, where, swept)


def _read_range(name: str, kind: str, spec: dict[str, Any], base: dict[str, Any],
                where: str, swept: set[str]) -> ParamSpace:
    check = _is_int if kind == "int" else _is_number
    words = "an integer" if kind == "int" else "a number (write 1.0e-4, not 1e-4, in YAML)"
    for bound in ("low", "high"):
        if not check(spec.get(bound)):
            raise SweepSpaceError(f"{where} key 'params.{name}.{bound}': got "
                                  f"{_show(spec.get(bound))}, expected {words}")
    low, high = spec["low"], spec["high"]
    if low > high:
        raise SweepSpaceError(f"{where} key 'params.{name}': low {_show(low)} is above high "
                              f"{_show(high)}")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise SweepSpaceError(f"{where} key 'params.{name}.log': got {_show(log)}, expected true "
                              "or false")
    if log and low <= 0:
        raise SweepSpaceError(f"{where} key 'params.{name}.low': got {_show(low)}, a log "
                              "distribution needs low > 0")
    step = spec.get("step")
    if step is not None:
        if not check(step) or step <= 0:
            raise SweepSpaceError(f"{where} key 'params.{name}.step': got {_show(step)}, expected "
                                  f"{'an integer' if kind == 'int' else 'a number'} > 0")
        if log and (kind == "float" or step != 1):
            raise SweepSpaceError(f"{where} key 'params.{name}': log and step do not go "
                                  "together (Optuna samples a log range without a step)")
    for bound in ("low", "high"):
        _check_value(name, spec[bound], base, swept, f"{where} key 'params.{name}.{bound}'")
    return ParamSpace(name, kind, low=low, high=high, log=log, step=step)


def _check_value(name: str, value: Any, base: dict[str, Any], swept: set[str], key: str) -> None:
    """Refuse a value that its `TrainConfig` field, or the base config, does not allow.

    ``model_validate`` (which skips `TrainConfig.__init__`'s one-line wrapping) tells a
    problem of the field itself (its location is the field) from a whole-config one
    (``batch_size`` against ``n_envs * n_steps``, rules against num_players). A
    whole-config problem is refused only when ``name`` is the one swept key: otherwise it
    depends on the other sampled values and is left to the trial.
    """
    try:
        TrainConfig.model_validate({**base, name: value})
    except ValidationError as error:
        problem = error.errors()[0]
        own = [p for p in error.errors() if p["loc"] and p["loc"][0] == name]
        if own:
            reason = f" ({own[0]['ctx']['error']})" if own[0]["type"] == "value_error" else ""
            raise SweepSpaceError(f"{key}: got {_show(value)}, expected {allowed_values(name)}"
                                  f"{reason}") from None
        if not problem["loc"] and swept == {name}:
            reason = problem.get("ctx", {}).get("error", problem["msg"])
            raise SweepSpaceError(f"{key}: got {_show(value)}, which the base config refuses: "
                                  f"{reason}") from None


def _mapping(value: Any, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SweepSpaceError(f"{key}: got {_show(value)} ({type(value).__name__}), expected a "
                              "mapping of key: value")
    return value


def _one_of(value: Any, allowed: tuple[str, ...], key: str) -> str:
    if value not in allowed:
        raise SweepSpaceError(f"{key}: got {_show(value)}, expected one of "
                              f"{', '.join(map(repr, allowed))}")
    return value


def _refuse_unknown(data: dict[str, Any], known: tuple[str, ...], where: str, what: str) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SweepSpaceError(f"{where}: unknown {what} {_show(key)}{hint}; known: "
                                  f"{', '.join(known) or 'none'}")


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _is_plain(value: Any) -> bool:
    """Whether ``value`` is JSON-like data (what a choice label is made of)."""
    if _is_scalar(value):
        return True
    if isinstance(value, list):
        return all(_is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def _is_int(value: Any, minimum: int | None = None) -> bool:
    ok = isinstance(value, int) and not isinstance(value, bool)
    return ok and (minimum is None or value >= minimum)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and value == value and abs(value) != float("inf"))


def dump_yaml(data: dict[str, Any]) -> str:
    """YAML text of config data, keys in their order."""
    return yaml.safe_dump(data, sort_keys=False)

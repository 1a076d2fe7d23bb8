"""The training config: strict pydantic validation with one-line errors naming the key,
files read with one-line errors, agent specs resolved up front, default.yaml complete."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from agents.training.config import (
    MAX_SEED,
    TrainConfig,
    TrainConfigError,
    allowed_values,
    load_train_config,
)
from agents.training.start import prepare_start

ROOT = Path(__file__).resolve().parents[2]


def _error(**changes) -> str:
    with pytest.raises(TrainConfigError) as caught:
        TrainConfig(**changes)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "key, value, allowed",
    [
        ("n_envs", True, "an integer >= 1"),
        ("n_envs", 3.0, "an integer >= 1"),
        ("n_envs", 0, "an integer >= 1"),
        ("n_envs", "256", "an integer >= 1"),
        ("n_envs", None, "an integer >= 1"),
        ("total_timesteps", -5, "an integer in 1.."),
        ("total_timesteps", [1000], "an integer in 1.."),
        ("seed", -1, f"an integer in 0..{MAX_SEED}"),
        ("seed", MAX_SEED + 1, f"an integer in 0..{MAX_SEED}"),
        ("imitation_games", False, "an integer in 0.."),
        ("eval_interval", -1, "an integer in 0.."),
        ("gamma", math.nan, "a finite number > 0 and <= 1"),
        ("gamma", 0, "a finite number > 0 and <= 1"),
        ("gamma", 1.5, "a finite number > 0 and <= 1"),
        ("learning_rate", math.inf, "a finite number > 0"),
        ("learning_rate", True, "a finite number > 0"),
        ("ent_coef", {"a": 1}, "a finite number >= 0"),
        ("ent_coef", "0.01", "a finite number >= 0"),
        ("snapshot_min_score", 1.5, "a finite number >= 0 and <= 1"),
        ("expert_soft_temperature", 0, "null (fit the searched moves) or a finite number > 0"),
        ("expert_soft_temperature", math.inf, "or a finite number > 0"),
        ("activation", "gelu", "one of 'relu', 'tanh'"),
        ("features", ["grid"], "one of 'raw', 'grid'"),
        ("progress", 1, "true or false"),
        ("rules", ["official"], "a rules preset name"),
        ("imitation_teacher", "", "an agent spec"),
        ("net_arch", [], "a list of 1 to 32 integers in 1..16384"),
        ("net_arch", [128, 0], "a list of 1 to 32 integers in 1..16384"),
        ("net_arch", [128, True], "a list of 1 to 32 integers in 1..16384"),
        ("net_arch", 128, "a list of 1 to 32 integers in 1..16384"),
        ("opponent_mix", {"ev": 1.0, "alien": 1.0}, "a mapping of opponent kinds"),
        ("opponent_mix", {"ev": -0.5, "greedy": 1.0}, "weights >= 0"),
        ("opponent_mix", {"ev": math.nan}, "finite weights"),
        ("opponent_mix", {"ev": 0.0}, "with a positive sum"),
        ("opponent_mix", ["ev"], "a mapping of opponent kinds"),
        ("eval_opponents", [], "a non-empty list of distinct agent specs"),
        ("eval_opponents", ["ev", "ev"], "a non-empty list of distinct agent specs"),
        ("eval_opponents", "ev", "a non-empty list of distinct agent specs"),
    ],
)
def test_train_config__bad_value_is_one_line_naming_key_value_and_allowed(key, value, allowed):
    message = _error(**{key: value})
    assert message.startswith(f"config key {key!r}: got {value!r} (")
    assert allowed in message


def test_train_config__bool_error_reads_as_the_issue_example():
    assert _error(n_envs=True) == "config key 'n_envs': got True (bool), expected an integer >= 1"


def test_train_config__ints_are_accepted_as_floats():
    config = TrainConfig(gamma=1, learning_rate_final=0, opponent_mix={"ev": 1})
    assert isinstance(config.gamma, float) and config.gamma == 1.0
    assert config.opponent_mix == {"ev": 1.0}


def test_train_config__several_bad_keys_are_named_on_the_one_line():
    message = _error(n_envs=0, gamma=2.0, seed=-1)
    assert message.startswith("config key 'seed'")  # the first in field order
    assert "also bad: 'gamma', 'n_envs'" in message


def test_train_config__unknown_key_names_it_and_suggests_the_close_one():
    with pytest.raises(TrainConfigError, match=r"unknown training config key 'n_env' \(did you "
                       r"mean 'n_envs'\?\); known keys: rules, num_players"):
        TrainConfig.from_dict({"n_env": 4})


def test_train_config__non_string_key_is_an_unknown_key():
    with pytest.raises(TrainConfigError, match="unknown training config key 1;"):
        TrainConfig.from_dict({1: 2})


def test_train_config__non_mapping_is_refused():
    with pytest.raises(TrainConfigError, match="must be a mapping of key: value, got list"):
        TrainConfig.from_dict(["n_envs", 4])


@pytest.mark.parametrize(
    "changes, start",
    [
        ({"batch_size": 10**6}, "config key 'batch_size': got 1000000 (int), expected at most "
                                "n_envs * n_steps = 256 * 64 = 16384"),
        ({"rules": "no-such-preset"}, "config key 'rules': unknown rules preset 'no-such-preset'"),
        ({"num_players": 13}, "config key 'num_players': got 13 for rules 'official'"),
    ],
)
def test_train_config__keys_that_disagree_are_named(changes, start):
    assert _error(**changes).startswith(start)


def test_train_config__assignment_is_checked_and_a_refused_value_is_not_kept():
    config = TrainConfig()
    with pytest.raises(TrainConfigError, match="config key 'n_envs': got True"):
        config.n_envs = True
    with pytest.raises(TrainConfigError, match="config key 'batch_size'"):
        config.batch_size = 10**7
    assert (config.n_envs, config.batch_size) == (256, 8192)
    config.n_envs = 512
    assert config.n_envs == 512


def test_train_config__every_field_has_a_docstring_and_an_allowed_text():
    for name, info in TrainConfig.model_fields.items():
        assert info.description, f"{name} has no docstring"
        assert allowed_values(name), name


def test_train_config__to_dict_round_trips_through_yaml():
    config = TrainConfig(net_arch=[64], opponent_mix={"ev": 2}, eval_opponents=["random"])
    data = yaml.safe_load(yaml.safe_dump(config.to_dict(), sort_keys=False))
    assert list(data) == list(TrainConfig.model_fields)
    assert TrainConfig.from_dict(data) == config


def test_default_yaml__holds_every_key_with_its_built_in_default():
    # the file itself, not a config loaded from it: a missing key would take the default
    # silently, so TrainConfig() == load_train_config(file) cannot see it
    data = yaml.safe_load((ROOT / "configs" / "default.yaml").read_text())
    assert list(data) == list(TrainConfig.model_fields)
    assert data == TrainConfig().to_dict()


SHIPPED_CONFIGS = sorted(path.name for path in (ROOT / "configs").glob("*.yaml"))
#: The configs of the runs that made the shipped networks and of experiments, kept as
#: records beside their reports (``results/``), as paths from the repository root.
RECORDED_CONFIGS = sorted(path.relative_to(ROOT).as_posix()
                          for path in (ROOT / "results").rglob("finetune_*.yaml"))


def _init_from(path: str) -> str:
    data = yaml.safe_load((ROOT / path).read_text()) or {}
    return str(data.get("init_from") or "")


#: The configs (presets and records) that start from a network still in models/.
FINE_TUNES = [path for path in [f"configs/{name}" for name in SHIPPED_CONFIGS] + RECORDED_CONFIGS
              if _init_from(path).startswith("models/") and (ROOT / _init_from(path)).is_file()]


def test_shipped_configs__the_lists_hold_the_presets_and_records():
    assert {"default.yaml", "strong_2p.yaml", "strong_4p.yaml",
            "expert_iteration.yaml"} <= set(SHIPPED_CONFIGS)
    assert "results/models/ppo_2p_stage3/finetune_2p_stage3.yaml" in RECORDED_CONFIGS
    # the first fine-tunes of the shipped small networks, widened to the feeding inputs
    assert {"results/models/ppo_2p_feeding/finetune_2p_feeding.yaml",
            "results/models/ppo_4p_feeding/finetune_4p_feeding.yaml"} <= set(FINE_TUNES)


def test_shipped_configs__start_only_from_networks_in_models():
    for name in SHIPPED_CONFIGS:
        init_from = _init_from(f"configs/{name}")
        assert not init_from or (init_from.startswith("models/") and (ROOT / init_from).is_file()), (
            f"configs/{name}: init_from {init_from!r} is not a network in models/")


@pytest.mark.parametrize("name", SHIPPED_CONFIGS)
def test_shipped_configs__load(name):
    config = load_train_config(ROOT / "configs" / name)
    assert config.resolve_rules().num_players == config.num_players


@pytest.mark.parametrize("path", RECORDED_CONFIGS)
def test_recorded_configs__still_load(path):
    config = load_train_config(ROOT / path)
    assert config.resolve_rules().num_players == config.num_players


@pytest.mark.parametrize("path", FINE_TUNES)
def test_configs__fine_tunes_start_from_a_shipped_model_they_fit(path, monkeypatch):
    monkeypatch.chdir(ROOT)  # init_from is relative to the repository root, as documented
    config = load_train_config(ROOT / path)
    assert config.init_from.startswith("models/")
    prepare_start(config)  # the network fits the config (rules, net_arch, features)


@pytest.mark.parametrize(
    "text, message",
    [
        ("n_envs: [1, 2\nseed: 3\n", r"is not valid YAML: .* \(line \d+, column \d+\)$"),
        ("- n_envs\n- 4\n", "must hold a mapping of key: value, got list"),
        ("just a string\n", "must hold a mapping of key: value, got str"),
        ("n_envs: yes\n", "config key 'n_envs': got True \\(bool\\)"),
        ("gamma: .nan\n", "config key 'gamma': got nan \\(float\\)"),
        ("seed: 2020-01-01\n", "config key 'seed': got '2020-01-01' \\(str\\)"),
    ],
)
def test_load_train_config__bad_file_content_is_one_line(tmp_path, text, message):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(TrainConfigError, match=message) as caught:
        load_train_config(path)
    assert "\n" not in str(caught.value)


def test_load_train_config__empty_file_gives_the_defaults(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text("# nothing\n")
    assert load_train_config(path) == TrainConfig()


def test_load_train_config__missing_path_or_directory_is_named(tmp_path):
    with pytest.raises(TrainConfigError, match="'.*nope.yaml' does not exist"):
        load_train_config(tmp_path / "nope.yaml")
    with pytest.raises(TrainConfigError, match="is a directory, not a YAML file"):
        load_train_config(tmp_path)


def test_load_train_config__undecodable_file_is_named(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(b"\xff\xfe\x00n_envs: 4")
    with pytest.raises(TrainConfigError, match="cfg.yaml' cannot be read"):
        load_train_config(path)


def test_load_train_config__unreadable_file_is_named(tmp_path, monkeypatch):
    path = tmp_path / "cfg.yaml"
    path.write_text("n_envs: 4\n")

    def refuse(self, *args, **kwargs):  # chmod 0 would not stop root, who runs CI here
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", refuse)
    with pytest.raises(TrainConfigError, match="cfg.yaml' cannot be read: .*Permission denied"):
        load_train_config(path)


def test_load_train_config__yaml_then_overrides_and_bad_override_named(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text("n_envs: 128\nseed: 3\n")
    config = load_train_config(path, seed=9, total_timesteps=None)
    assert (config.n_envs, config.seed, config.total_timesteps) == (128, 9, 3_000_000)
    with pytest.raises(TrainConfigError, match="config key 'seed': got -1 \\(int\\)"):
        load_train_config(path, seed=-1)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"eval_opponents": ["greedy", "nosuch"]},
         "config key 'eval_opponents': unknown agent spec 'nosuch'"),
        ({"eval_opponents": ["no_such_module:Agent"]},
         "config key 'eval_opponents': agent spec 'no_such_module:Agent': cannot import"),
        ({"imitation_teacher": "ppo:/no/such/file.zip"},
         "config key 'imitation_teacher': agent spec 'ppo:/no/such/file.zip': checkpoint"),
    ],
)
def test_prepare_start__bad_spec_names_the_key(changes, message):
    with pytest.raises(TrainConfigError, match=message) as caught:
        prepare_start(TrainConfig(**changes))
    assert "\n" not in str(caught.value)


def test_prepare_start__teacher_is_ignored_without_a_warm_start():
    prepare_start(TrainConfig(imitation_games=0, imitation_teacher="nosuch",
                                  eval_opponents=["random"]))
    with pytest.raises(TrainConfigError, match="'imitation_teacher'"):
        prepare_start(TrainConfig(imitation_teacher="nosuch", eval_opponents=["random"]))

"""Config composition: ``extends:`` chains (relative paths, loops refused), stages merged
by name, ``--set KEY=VALUE``; stage lists checked before any work with one line naming the
stage and the key; every recipe of configs/recipes/ loads with all its stages, and no
config in configs/ copies another."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.training.config import (
    RUN_KEYS,
    TrainConfig,
    TrainConfigError,
    apply_setting,
    load_train_config,
    read_composed_config,
)

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "configs" / "recipes"


def _write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def _one_line_error(call) -> str:
    with pytest.raises(TrainConfigError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------------- extends


def test_extends__is_relative_to_the_including_file_and_chains(tmp_path):
    _write(tmp_path / "base.yaml", {"n_envs": 32, "n_steps": 32, "batch_size": 512})
    _write(tmp_path / "mid" / "middle.yaml", {"extends": "../base.yaml", "n_steps": 16})
    top = _write(tmp_path / "top.yaml", {"extends": "mid/middle.yaml", "batch_size": 256})
    config = load_train_config(top)
    assert (config.n_envs, config.n_steps, config.batch_size) == (32, 16, 256)
    assert "extends" not in read_composed_config(top)


def test_extends__a_loop_is_one_line_naming_the_chain(tmp_path):
    _write(tmp_path / "a.yaml", {"extends": "b.yaml"})
    _write(tmp_path / "b.yaml", {"extends": "a.yaml"})
    message = _one_line_error(lambda: load_train_config(tmp_path / "a.yaml"))
    assert "extends itself" in message and "a.yaml -> " in message


@pytest.mark.parametrize("extends, words", [("missing.yaml", "which is not a file"),
                                            (3, "key 'extends': got 3 (int)")])
def test_extends__a_bad_base_is_one_line(tmp_path, extends, words):
    path = _write(tmp_path / "a.yaml", {"extends": extends})
    assert words in _one_line_error(lambda: load_train_config(path))


def test_extends__stages_named_like_the_base_stages_merge_into_them(tmp_path):
    _write(tmp_path / "base.yaml", {"stages": [
        {"name": "one", "total_timesteps": 100, "n_epochs": 3},
        {"name": "two", "total_timesteps": 200}]})
    merged = _write(tmp_path / "merged.yaml", {"extends": "base.yaml",
                                                "stages": [{"name": "two", "n_epochs": 4}]})
    replaced = _write(tmp_path / "replaced.yaml", {"extends": "base.yaml",
                                                    "stages": [{"total_timesteps": 5}]})
    assert load_train_config(merged).stages == [
        {"name": "one", "total_timesteps": 100, "n_epochs": 3},
        {"name": "two", "total_timesteps": 200, "n_epochs": 4}]
    assert load_train_config(replaced).stages == [{"total_timesteps": 5}]


def test_extends__a_stage_added_after_a_base_stage_follows_it(tmp_path):
    _write(tmp_path / "base.yaml", {"stages": [
        {"name": "one", "total_timesteps": 100}, {"name": "two", "total_timesteps": 200}]})
    top = _write(tmp_path / "top.yaml", {"extends": "base.yaml", "stages": [
        {"name": "two", "n_epochs": 4},
        {"name": "cool", "after": "two", "total_timesteps": 50},
        {"name": "mid", "after": "one", "total_timesteps": 70}]})
    assert load_train_config(top).stages == [
        {"name": "one", "total_timesteps": 100}, {"name": "mid", "total_timesteps": 70},
        {"name": "two", "total_timesteps": 200, "n_epochs": 4},
        {"name": "cool", "total_timesteps": 50}]


@pytest.mark.parametrize("stage, words", [
    ({"name": "cool", "after": "three", "total_timesteps": 5},
     "stage 1 ('cool'): key 'after': got 'three', expected the name of a stage of the config "
     "it extends (one, two) or of a stage added above it"),
    ({"name": "two", "after": "one", "total_timesteps": 5}, "needs a new 'name'"),
    ({"after": "one", "total_timesteps": 5}, "needs a new 'name'"),
])
def test_extends__a_bad_added_stage_is_one_line(tmp_path, stage, words):
    _write(tmp_path / "base.yaml", {"stages": [{"name": "one"}, {"name": "two"}]})
    top = _write(tmp_path / "top.yaml", {"extends": "base.yaml", "stages": [stage]})
    assert words in _one_line_error(lambda: load_train_config(top))


def test_extends__a_stage_added_after_an_added_stage_follows_it(tmp_path):
    _write(tmp_path / "base.yaml", {"stages": [
        {"name": "one", "total_timesteps": 100}, {"name": "two", "total_timesteps": 200}]})
    top = _write(tmp_path / "top.yaml", {"extends": "base.yaml", "stages": [
        {"name": "cool", "after": "one", "total_timesteps": 50},
        {"name": "colder", "after": "cool", "total_timesteps": 20},
        {"name": "warm", "after": "one", "total_timesteps": 30}]})
    assert [stage["name"] for stage in load_train_config(top).stages] == [
        "one", "cool", "colder", "warm", "two"]


@pytest.mark.parametrize("stages, words", [
    ([{"name": "colder", "after": "cool"}, {"name": "cool", "after": "one"}],
     "stage 1 ('colder'): key 'after': got 'cool', expected the name of a stage of the config "
     "it extends (one, two) or of a stage added above it"),
    ([{"name": "cool", "after": "one"}, {"name": "cool", "after": "two"}],
     "stage 2 ('cool'): a stage named 'cool' is added above it already"),
    ([{"name": "cool", "after": "one"}, {"name": "x", "after": "nowhere"}],
     "or of a stage added above it; added above it: cool"),
])
def test_extends__a_bad_chain_of_added_stages_is_one_line(tmp_path, stages, words):
    _write(tmp_path / "base.yaml", {"stages": [{"name": "one"}, {"name": "two"}]})
    top = _write(tmp_path / "top.yaml", {"extends": "base.yaml", "stages": stages})
    assert words in _one_line_error(lambda: load_train_config(top))


def test_extends__a_dropped_base_stage_is_removed(tmp_path):
    _write(tmp_path / "base.yaml", {"stages": [
        {"name": "one", "total_timesteps": 100}, {"name": "two", "total_timesteps": 200},
        {"name": "three", "total_timesteps": 300}]})
    top = _write(tmp_path / "top.yaml", {"extends": "base.yaml", "stages": [
        {"name": "two", "drop": True}, {"name": "three", "n_epochs": 4}]})
    assert load_train_config(top).stages == [
        {"name": "one", "total_timesteps": 100},
        {"name": "three", "total_timesteps": 300, "n_epochs": 4}]


@pytest.mark.parametrize("stage, words", [
    ({"name": "two", "drop": "yes"}, "stage 1 ('two'): key 'drop': got 'yes', expected 'drop: true'"),
    ({"name": "two", "drop": True, "n_epochs": 4}, "got True with 'n_epochs', expected"),
    ({"name": "six", "drop": True}, "stage 1 ('six'): 'drop' needs the 'name' of a stage of "
     "the config it extends (one, two)"),
])
def test_extends__a_bad_drop_is_one_line(tmp_path, stage, words):
    _write(tmp_path / "base.yaml", {"stages": [{"name": "one"}, {"name": "two"}]})
    top = _write(tmp_path / "top.yaml", {"extends": "base.yaml", "stages": [stage]})
    assert words in _one_line_error(lambda: load_train_config(top))


def test_stages__after_without_a_base_to_follow_is_an_unknown_key(tmp_path):
    path = _write(tmp_path / "alone.yaml", {"stages": [{"name": "cool", "after": "one"}]})
    assert "'after'" in _one_line_error(lambda: load_train_config(path))


# ----------------------------------------------------------------------------------- --set


def test_apply_setting__yaml_values_dotted_mappings_and_stages():
    data = {"stages": [{"name": "one", "total_timesteps": 100},
                       {"name": "two", "total_timesteps": 200, "opponent_mix": {"ev": 1.0}}]}
    for setting in ("learning_rate=3e-4", "net_arch=[64, 64]", "init_from=null",
                    "opponent_mix.ev=0.5", "stages.one.n_epochs=5",
                    "stages.2.opponent_mix.self=0.5", "stages.1.opponent_mix.ev=0.9"):
        apply_setting(data, setting)
    config = TrainConfig.from_dict(data)
    assert config.learning_rate == 3e-4 and config.net_arch == [64, 64]
    # one entry changed, the others kept (from the defaults)
    assert config.opponent_mix == {"random": 0.1, "greedy": 0.3, "ev": 0.5, "self": 0.3}
    one, two = config.stage_configs()
    assert one.n_epochs == 5 and one.opponent_mix["ev"] == 0.9 and one.opponent_mix["self"] == 0.3
    assert two.opponent_mix == {"ev": 1.0, "self": 0.5}


@pytest.mark.parametrize("setting, words", [
    ("learning_rate", "expected KEY=VALUE"),
    ("n_env=4", "unknown training config key 'n_env' (did you mean 'n_envs'?)"),
    ("stages.three.n_epochs=2", "no stage 'three'; the stages are stage 1 ('one')"),
    ("n_envs.x=2", "n_envs is not a mapping"),
    ("net_arch=[1,", "the value is not YAML"),
])
def test_apply_setting__mistakes_are_one_line(setting, words):
    data = {"n_envs": 4, "stages": [{"name": "one", "total_timesteps": 1}]}
    message = _one_line_error(lambda: apply_setting(data, setting))
    assert message.startswith(f"--set {setting!r}") and words in message


def test_load_train_config__settings_apply_after_the_file_and_before_overrides(tmp_path):
    path = _write(tmp_path / "c.yaml", {"seed": 1, "n_epochs": 2})
    config = load_train_config(path, ["n_epochs=7", "seed=5"], seed=9)
    assert (config.n_epochs, config.seed) == (7, 9)


# ---------------------------------------------------------------------------------- stages


def test_stage_configs__each_stage_changes_the_base_and_nothing_else():
    config = TrainConfig(learning_rate=1e-3, stages=[
        {"name": "first", "total_timesteps": 10},
        {"total_timesteps": 20, "features": "grid_feeding", "net_arch": [128, 256]}])
    first, second = config.stage_configs()
    assert (first.total_timesteps, first.features, first.learning_rate) == (10, "grid", 1e-3)
    assert (second.total_timesteps, second.net_arch, second.learning_rate) == (20, [128, 256], 1e-3)
    assert first.stages == [] and second.stages == []
    assert config.stage_names() == ["first", "stage 2"]
    assert TrainConfig().stage_configs() == [TrainConfig()]


@pytest.mark.parametrize("stages, words", [
    ([{}], "stage 1: empty stage"),
    ([{"name": "a"}], "stage 1 ('a'): empty stage"),
    (["fast"], "expected a list of mappings"),
    ([{"total_timesteps": 5, "bogus": 1}], "stage 1: unknown training config key 'bogus'"),
    ([{"n_epochs": 0}], "stage 1: config key 'n_epochs': got 0 (int), expected an integer in 1..1000"),
    ([{"seed": 3}], "stage 1: config key 'seed' cannot change between stages"),
    ([{"n_epochs": 2}, {"name": "b", "imitation_games": 5}],
     "stage 2 ('b'): config key 'imitation_games' applies to the first stage only"),
    ([{"n_epochs": 2}, {"net_arch": [64, 128]}],
     "stage 2: config key 'net_arch': got [64, 128], which the previous stage's [128, 128] "
     "cannot grow into"),
    ([{"n_epochs": 2}, {"net_arch": [128, 128, 128]}], "stage 2: config key 'net_arch'"),
    ([{"features": "grid_feeding"}, {"n_epochs": 3}],
     "stage 2: config key 'features': got 'grid', an earlier kind than the previous stage's"),
    ([{"n_epochs": 2}, {"activation": "tanh"}], "stage 2: config key 'activation'"),
    ([{"name": "a", "n_epochs": 2}, {"name": "a", "n_epochs": 3}], "names an earlier stage"),
    ([{"name": "2", "n_epochs": 2}], "key 'name': got '2'"),
])
def test_stages__a_bad_stage_list_is_one_line_naming_the_stage_and_key(stages, words):
    assert words in _one_line_error(lambda: TrainConfig(stages=stages))


@pytest.mark.parametrize("key", [k for k in RUN_KEYS if k != "stages"])
def test_stages__run_keys_are_refused_in_every_stage(key):
    value = TrainConfig().to_dict()[key]
    message = _one_line_error(lambda: TrainConfig(stages=[{key: value}]))
    assert f"config key {key!r} cannot change between stages" in message


def test_stages__an_unknown_eval_opponent_of_a_later_stage_is_refused_before_any_work():
    from agents.training.start import prepare_start

    config = TrainConfig(eval_opponents=["random"], imitation_games=0,
                         stages=[{"n_epochs": 1}, {"name": "late", "eval_opponents": ["nosuch"]}])
    message = _one_line_error(lambda: prepare_start(config))
    assert message.startswith("stage 2 ('late'): config key 'eval_opponents': unknown agent spec")


# --------------------------------------------------------------------------------- recipes


@pytest.mark.parametrize("players", range(2, 9))
def test_recipes__one_per_table_size_loads_with_every_stage_from_scratch(players):
    path = RECIPES / f"{players}p.yaml"
    config = load_train_config(path)
    stages = config.stage_configs()
    assert config.num_players == players and len(stages) >= 3
    assert config.resolve_rules().num_players == players
    # from scratch: an imitation warm start, never a shipped network
    assert all(stage.init_from is None for stage in stages) and stages[0].imitation_games > 0
    # the network grows in a later stage, and one stage runs expert iteration
    assert stages[-1].features != stages[0].features
    assert any(stage.expert_interval > 0 for stage in stages)
    assert "init_from" not in path.read_text()


def _configs() -> list[Path]:
    """Every training config in configs/ (the rules presets and sweeps aside)."""
    return sorted(p for p in (ROOT / "configs").rglob("*.yaml")
                  if p.parent.name not in ("rules", "sweeps"))


@pytest.mark.parametrize("path", _configs(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_configs__each_extends_another_and_sets_only_what_differs(path):
    if path.name == "default.yaml":  # the defaults themselves, key by key
        return
    raw = yaml.safe_load(path.read_text())
    assert "extends" in raw, f"{path.name} copies keys instead of extending a config"
    inherited = read_composed_config(path.parent / raw["extends"])
    resolved = {**TrainConfig().to_dict(), **inherited}
    repeated = sorted(k for k, v in raw.items() if k not in ("extends", "stages")
                      and resolved.get(k) == v)
    assert not repeated, f"{path.name} repeats inherited values of {repeated}"


@pytest.mark.parametrize("stage, words", [
    ({"name": "x", "after": ["a", "b"]}, "stage 1: key 'after': got ['a', 'b'], expected a stage "
     "name (text)"),
    ({"name": ["two"], "drop": True}, "stage 1: key 'name': got ['two'], expected a stage name"),
    ({"name": {"a": 1}, "n_epochs": 3}, "stage 1: key 'name': got {'a': 1}, expected"),
])
def test_extends__a_stage_name_or_after_that_is_not_text_is_one_line_naming_the_file(
        tmp_path, stage, words):
    _write(tmp_path / "base.yaml", {"stages": [{"name": "one"}, {"name": "two"}]})
    top = _write(tmp_path / "top.yaml", {"extends": "base.yaml", "stages": [stage]})
    message = _one_line_error(lambda: load_train_config(top))
    assert words in message and "top.yaml" in message

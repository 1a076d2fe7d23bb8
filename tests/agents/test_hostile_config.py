"""Hostile and damaged inputs to a training start (#34 part B): config values that the run
would only fail at later, run directories it cannot write, YAML files that expand or nest
without bound, and Ray addresses that are not a Ray head. Each is refused at the start, in
one short line. (The sweep cases are in test_sweep.py.)"""

from __future__ import annotations

import http.server
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml

import agents.cli.train as train_cli
import agents.training.trainer as trainer_module
from agents.evaluation.games import max_games
from agents.parallel import DistributedSetupError, check_reachable, ray_session
from agents.ppo.checkpoint import (
    MAX_LAYER_WIDTH,
    MAX_LAYERS,
    MAX_NETWORK_PARAMETERS,
    network_parameter_count,
)
from agents.sweep.space import SweepSpaceError, load_sweep_space
from agents.training.budgets import MAX_EPOCHS, MAX_TRAINING_BYTES, rollout_bytes
from agents.training.config import TrainConfig, TrainConfigError, load_train_config
from agents.training.run_dir import RunDirError, check_run_dir
from agents.training.start import prepare_start
from skyjo_env.core.rules import load_rules
from skyjo_env.core.safe_yaml import MAX_YAML_BYTES, MAX_YAML_DEPTH, YamlFileError

ROOT = Path(__file__).resolve().parents[2]
#: What "short" means for a message that could have repeated a user's value.
SHORT = 2000


def _config_error(**changes) -> str:
    with pytest.raises(TrainConfigError) as caught:
        TrainConfig(**changes)
    message = str(caught.value)
    assert "\n" not in message and len(message) < SHORT
    return message


# ---------------------------------------------------------------- config bounds


def test_train_config__eval_games_above_the_evaluation_cap_is_refused_up_front():
    cap = max_games(2)
    TrainConfig(eval_games=cap)  # the cap itself is fine
    message = _config_error(eval_games=cap + 1)
    assert message.startswith("config key 'eval_games'") and f"at most {cap}" in message


def test_train_config__eval_games_cap_follows_the_table_size():
    assert max_games(6) < max_games(2)
    message = _config_error(num_players=6, eval_games=max_games(6) + 1)
    assert "'eval_games'" in message and "6 players" in message


@pytest.mark.parametrize(
    "net_arch",
    [[MAX_LAYER_WIDTH + 1], [8] * (MAX_LAYERS + 1)],
)
def test_train_config__net_arch_beyond_the_checkpoint_limits_is_refused(net_arch):
    message = _config_error(net_arch=net_arch)
    assert message.startswith("config key 'net_arch'")
    assert f"1 to {MAX_LAYERS} integers in 1..{MAX_LAYER_WIDTH}" in message


def test_train_config__network_above_the_parameter_budget_is_refused():
    net_arch = [4096, 4096]  # each layer within the width limit, the whole network not
    assert network_parameter_count(net_arch, load_rules("official")) > MAX_NETWORK_PARAMETERS
    message = _config_error(net_arch=net_arch)
    assert "'net_arch'" in message and f"{MAX_NETWORK_PARAMETERS:,}" in message


def test_network_parameter_count__bounds_the_built_policy():
    pytest.importorskip("torch")
    from agents.ppo.checkpoint import build_policy, checkpoint_metadata

    rules = load_rules("official")
    for features in ("raw", "grid_feeding_waits_risk"):
        architecture = {"net_arch": [32, 16], "activation": "relu", "features": features}
        policy = build_policy(checkpoint_metadata(rules, 0, policy=architecture),
                              trainable=False)
        built = sum(p.numel() for p in policy.parameters())
        assert built <= network_parameter_count([32, 16], rules), features


def test_train_config__games_too_big_to_allocate_are_refused_naming_n_envs():
    message = _config_error(n_envs=10**9, batch_size=64)
    assert message.startswith("config key 'n_envs'") and "4 GiB" in message


def test_train_config__rollout_too_big_to_allocate_is_refused_naming_both_keys():
    rules = load_rules("official")
    assert rollout_bytes(4096, 65536, rules) > MAX_TRAINING_BYTES
    message = _config_error(n_envs=4096, n_steps=65536)
    assert "'n_envs' and 'n_steps'" in message and "4 GiB" in message


@pytest.mark.parametrize(
    "key, value",
    [
        ("n_epochs", 10**23),
        ("n_epochs", MAX_EPOCHS + 1),
        ("imitation_epochs", 10**6),
        ("expert_epochs", 10**6),
        ("total_timesteps", 10**23),
        ("eval_interval", 10**23),
        ("checkpoint_interval", 10**23),
        ("expert_interval", 10**23),
        ("imitation_games", 10**9),
        ("expert_games", 10**9),
        ("value_warmup_rollouts", 10**9),
        ("max_snapshots", 10**9),
        ("torch_threads", 10**9),
    ],
)
def test_train_config__unbounded_counts_are_bounded(key, value):
    message = _config_error(**{key: value})
    assert message.startswith(f"config key {key!r}: got {value!r} (int), expected an integer in ")


def test_train_config__every_shipped_and_recorded_config_is_still_valid():
    checked = 0
    for path in sorted([*ROOT.glob("configs/**/*.yaml"), *ROOT.glob("results/**/*.yaml"),
                        *ROOT.glob("experiments/**/*.yaml")]):
        if "rules" in path.parts or "sweeps" in path.parts:
            continue
        data = yaml.safe_load(path.read_text())
        if isinstance(data, dict) and set(data) <= set(TrainConfig.model_fields):
            load_train_config(path)
            checked += 1
    for path in sorted(ROOT.glob("configs/sweeps/*.yaml")):
        load_sweep_space(path)
        checked += 1
    assert checked >= 5


def test_sweep_space__epochs_range_to_1e23_is_refused_at_load(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text("params: {n_epochs: {type: int, low: 1, high: 100000000000000000000000}}\n")
    with pytest.raises(SweepSpaceError, match=r"'params\.n_epochs\.high'.*integer in 1\.\.1000"):
        load_sweep_space(path)


# ---------------------------------------------------------------- the run directory


def test_check_run_dir__a_file_in_its_place_is_one_line_naming_it(tmp_path):
    path = tmp_path / "run"
    path.write_text("not a directory")
    with pytest.raises(RunDirError, match=r"run directory '.*run' is a file, not a directory"):
        check_run_dir(path)
    assert path.read_text() == "not a directory"


def test_check_run_dir__a_parent_that_is_a_file_is_named(tmp_path):
    (tmp_path / "runs").write_text("")
    with pytest.raises(RunDirError, match=r"cannot be created: '.*runs' is a file"):
        check_run_dir(tmp_path / "runs" / "a" / "b")


def test_check_run_dir__an_unwritable_directory_is_refused(tmp_path, monkeypatch):
    import agents.training.run_dir as run_dir_module

    def refuse(*args, **kwargs):  # chmod would not stop root, who runs CI here
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(run_dir_module.tempfile, "mkstemp", refuse)
    with pytest.raises(RunDirError, match="is not writable: Permission denied"):
        check_run_dir(tmp_path)


def test_check_run_dir__a_file_where_the_run_writes_a_directory_is_refused(tmp_path):
    (tmp_path / "checkpoints").write_text("")
    with pytest.raises(RunDirError, match="holds a file 'checkpoints'"):
        check_run_dir(tmp_path)


def test_check_run_dir__creates_a_new_run_directory_and_leaves_nothing_else(tmp_path):
    path = check_run_dir(tmp_path / "a" / "run")
    assert path.is_dir() and list(path.iterdir()) == []


def _no_trainer(monkeypatch) -> None:
    class NoTrainer:
        def __init__(self, *args, **kwargs):
            raise AssertionError("the trainer was built")

    monkeypatch.setattr(trainer_module, "Trainer", NoTrainer)


def test_run_training__unwritable_run_dir_fails_before_any_work(tmp_path, monkeypatch):
    _no_trainer(monkeypatch)
    (tmp_path / "run").write_text("")
    start = prepare_start(TrainConfig(imitation_games=0, eval_opponents=["greedy"]))
    with pytest.raises(RunDirError):
        trainer_module.run_training(start, tmp_path / "run")


def test_train_cli__run_dir_that_is_a_file_is_one_error_line_and_exit_2(tmp_path, monkeypatch,
                                                                        capsys):
    _no_trainer(monkeypatch)
    config = tmp_path / "cfg.yaml"
    config.write_text("imitation_games: 0\neval_opponents: [greedy]\n")
    (tmp_path / "run").write_text("")
    code = train_cli.main(["--config", str(config), "--run-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "is a file, not a directory" in err


# ---------------------------------------------------------------- YAML files


def _laughs(levels: int, key: str, indent: str = "") -> str:
    """A "billion laughs" YAML text: ``levels`` lists of 9 aliases of the one before,
    under ``key``; fully expanded, 9**levels strings."""
    lines = [f"{indent}{key}:", f'{indent}  - &l0 ["lol","lol","lol","lol","lol","lol","lol",'
             '"lol","lol"]']
    for level in range(1, levels):
        refs = ",".join([f"*l{level - 1}"] * 9)
        lines.append(f"{indent}  - &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def _assert_refused_quickly(load, path: Path) -> str:
    started = time.perf_counter()
    with pytest.raises(ValueError) as caught:
        load(path)
    message = str(caught.value)
    assert time.perf_counter() - started < 2
    assert "\n" not in message and len(message) < 500
    assert "anchors and aliases" in message and "(line " in message
    return message


def test_load_rules__billion_laughs_is_a_short_line_at_once(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(_laughs(7, "deck"))
    assert len(path.read_bytes()) < 500
    _assert_refused_quickly(load_rules, path)


def test_load_train_config__billion_laughs_is_a_short_line_at_once(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text(_laughs(7, "eval_opponents"))
    assert "training config" in _assert_refused_quickly(load_train_config, path)


def test_load_sweep_space__billion_laughs_is_a_short_line_at_once(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text("params:\n  net_arch:\n    type: categorical\n"
                    + _laughs(7, "choices", indent="    "))
    assert "sweep space" in _assert_refused_quickly(load_sweep_space, path)


def test_load_rules__a_huge_value_is_repeated_short(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("deck: [" + ", ".join(["[x, 1]"] * 5_000) + "]\n")  # about 40 kB shown whole
    with pytest.raises(ValueError) as caught:
        load_rules(path)
    assert len(str(caught.value)) < 500 and "SkyjoRules.deck=" in str(caught.value)


def test_train_config__a_huge_unknown_key_is_repeated_short():
    message = str(pytest.raises(TrainConfigError, TrainConfig.from_dict,
                                {"x" * 100_000: 1, "y" * 100_000: 2}).value)
    assert len(message) < SHORT and "unknown training config key" in message


def test_load_train_config__deep_nesting_is_one_line(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text("net_arch: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(TrainConfigError, match=f"nesting deeper than {MAX_YAML_DEPTH} levels"):
        load_train_config(path)


def test_load_train_config__a_file_above_the_size_bound_is_refused_unread(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text("# " + "x" * MAX_YAML_BYTES + "\n")
    with pytest.raises(TrainConfigError, match="is larger than 1024 KiB"):
        load_train_config(path)


@pytest.mark.parametrize("text", ["rules: !!set {a, b}\n", "rules: !!binary aGVsbG8=\n",
                                  "rules: !!timestamp 2020-01-01\n"])
def test_load_train_config__tags_of_non_plain_values_are_refused(tmp_path, text):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(TrainConfigError, match=r"the tag '\w+' is not allowed .*\(line 1"):
        load_train_config(path)


def test_safe_yaml__dates_stay_strings(tmp_path):
    from skyjo_env.core.safe_yaml import load_yaml_file

    path = tmp_path / "f.yaml"
    path.write_text("a: 2020-01-01\nb: 2020-01-01 10:00:00\n")
    assert load_yaml_file(path, "file") == {"a": "2020-01-01", "b": "2020-01-01 10:00:00"}
    with pytest.raises(YamlFileError):
        load_yaml_file(tmp_path / "missing.yaml", "file")


# ---------------------------------------------------------------- Ray addresses


@pytest.fixture
def http_address():
    """A local HTTP/1 server (what Ray's dashboard port is), as HOST:PORT."""

    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def silent_address():
    """A listening TCP port that accepts and never answers, as HOST:PORT."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


@pytest.mark.parametrize("fixture, words", [("http_address", "answers"),
                                            ("silent_address", "did not answer within 1 s")])
def test_check_reachable__a_port_that_is_not_a_ray_head_is_one_line_within_the_timeout(
        request, fixture, words):
    address = request.getfixturevalue(fixture)
    started = time.perf_counter()
    with pytest.raises(DistributedSetupError) as caught:
        check_reachable(address, timeout_s=1.0)
    assert time.perf_counter() - started < 3
    message = str(caught.value)
    assert f"{address!r} is not a Ray head: it {words}" in message and "\n" not in message


def test_check_reachable__a_grpc_server_passes():
    grpc = pytest.importorskip("grpc")
    from concurrent import futures

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        check_reachable(f"127.0.0.1:{port}", timeout_s=2.0)  # Ray's head speaks gRPC
        check_reachable(f"ray://127.0.0.1:{port}", timeout_s=2.0)
    finally:
        server.stop(None)


def test_ray_session__http_server_address_fails_in_one_line_without_starting_ray(http_address):
    pytest.importorskip("ray")
    started = time.perf_counter()
    with pytest.raises(DistributedSetupError, match="is not a Ray head"):
        with ray_session(address=http_address, connect_timeout_s=1.0):
            raise AssertionError("Ray started")
    assert time.perf_counter() - started < 10

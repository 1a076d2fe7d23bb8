"""The training command: every config mistake is one `error:` line and exit code 2 before
any training starts; Ctrl-C exits 130; the closing lines name only files that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

import agents.cli.train as train_cli


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if training would start; returns the list of calls."""
    calls = []

    def fake_train(config, run_dir, resume=False, log_lines=False):
        calls.append(config)
        raise AssertionError("training started")

    monkeypatch.setattr(train_cli, "run_training", fake_train)
    return calls


def _run_failing(capsys, argv: list[str]) -> str:
    code = train_cli.main(argv)
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("n_envs: [1, 2\n", "is not valid YAML"),
        ("- n_envs\n- 4\n", "must hold a mapping of key: value, got list"),
        ("n_env: 4\n", "unknown training config key 'n_env' (did you mean 'n_envs'?)"),
        ("n_envs: true\n", "config key 'n_envs': got True (bool), expected an integer >= 1"),
        ("net_arch: 128\n", "config key 'net_arch': got 128 (int)"),
        ("gamma: .inf\n", "config key 'gamma': got inf (float)"),
        ("batch_size: 100000\n", "config key 'batch_size': got 100000 (int), expected at most"),
        ("eval_opponents: []\n", "config key 'eval_opponents': got [] (list)"),
        ("rules: no-such-preset\n", "config key 'rules': unknown rules preset 'no-such-preset'"),
        ("eval_opponents: [nosuch]\n", "config key 'eval_opponents': unknown agent spec"),
        ("imitation_teacher: ppo:missing.zip\n", "config key 'imitation_teacher'"),
    ],
)
def test_train_cli__config_mistake_is_one_error_line_and_exit_2(
    tmp_path, capsys, no_training, text, fragment
):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    line = _run_failing(capsys, ["--config", str(path), "--run-dir", str(tmp_path / "run")])
    assert fragment in line
    assert not no_training


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--seed", "-1"], "config key 'seed': got -1 (int)"),
        (["--total-timesteps", "-5"], "config key 'total_timesteps': got -5 (int)"),
        (["--config", "no/such/file.yaml"], "'no/such/file.yaml' does not exist"),
        (["--config", "."], "'.' is a directory, not a YAML file"),
    ],
)
def test_train_cli__bad_option_is_one_error_line_and_exit_2(
    tmp_path, capsys, no_training, extra, fragment
):
    line = _run_failing(capsys, [*extra, "--run-dir", str(tmp_path / "run")])
    assert fragment in line
    assert not no_training


def test_train_cli__unreadable_config_is_one_error_line(tmp_path, capsys, no_training):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(b"\xff\xfe\x00seed: 1\n")
    line = _run_failing(capsys, ["--config", str(path), "--run-dir", str(tmp_path / "run")])
    assert "cfg.yaml' cannot be read" in line


def _summary(run_dir: Path, interrupted: bool) -> dict:
    return {
        "timesteps": 4096,
        "interrupted": interrupted,
        "best_score": float("-inf"),
        "last_checkpoint": str(run_dir / "checkpoints" / "last.zip"),
        "best_checkpoint": str(run_dir / "best.zip"),
        "steps_per_second": 1000.0,
    }


def test_train_cli__closing_lines_name_only_files_that_exist(tmp_path, capsys, monkeypatch):
    run_dir = tmp_path / "run"

    def fake_train(config, run_dir_arg, resume=False, log_lines=False):  # stopped before any evaluation
        (run_dir / "checkpoints").mkdir(parents=True)
        (run_dir / "checkpoints" / "last.zip").write_bytes(b"")
        return _summary(run_dir, interrupted=True)

    monkeypatch.setattr(train_cli, "run_training", fake_train)
    code = train_cli.main(["--run-dir", str(run_dir)])
    out = capsys.readouterr().out
    assert code == train_cli.EXIT_INTERRUPTED
    assert "best.zip (score" not in out and f"ppo:{run_dir / 'best.zip'}" not in out
    assert "no best.zip (no evaluation finished)" in out
    assert f"ppo:{run_dir / 'checkpoints' / 'last.zip'}" in out


def test_train_cli__closing_lines_say_the_best_score_is_from_its_own_deals(
    tmp_path, capsys, monkeypatch
):
    run_dir = tmp_path / "run"

    def fake_train(config, run_dir_arg, resume=False, log_lines=False):  # finished, with an evaluation
        (run_dir / "checkpoints").mkdir(parents=True)
        (run_dir / "checkpoints" / "last.zip").write_bytes(b"")
        (run_dir / "best.zip").write_bytes(b"")
        return {**_summary(run_dir, interrupted=False), "best_score": 0.625}

    monkeypatch.setattr(train_cli, "run_training", fake_train)
    assert train_cli.main(["--run-dir", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"best {run_dir / 'best.zip'} (score 0.625 on the deals it was picked on)" in out
    assert f"evaluate it on fresh deals: python evaluate.py --agents ppo:{run_dir / 'best.zip'} ev" in out


def test_train_cli__keyboard_interrupt_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch):
    def interrupted_train(config, run_dir, resume=False, log_lines=False):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_cli, "run_training", interrupted_train)
    code = train_cli.main(["--run-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 130
    assert err.count("\n") == 1 and err.startswith("error: interrupted before training finished")
    assert "no checkpoint was written" in err


def test_train_cli__default_run_ends_by_naming_the_recipe_of_the_strongest_agent(
    tmp_path, capsys, monkeypatch
):
    run_dir = tmp_path / "run"

    def fake_train(config, run_dir_arg, resume=False, log_lines=False):
        (run_dir / "checkpoints").mkdir(parents=True)
        (run_dir / "checkpoints" / "last.zip").write_bytes(b"")
        return _summary(run_dir, interrupted=False)

    monkeypatch.setattr(train_cli, "run_training", fake_train)
    assert train_cli.main(["--run-dir", str(run_dir), "--set", "num_players=4"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "python train.py --config configs/recipes/4p.yaml" in last
    assert (Path(__file__).resolve().parents[2] / "configs" / "recipes" / "4p.yaml").is_file()


@pytest.mark.parametrize("setting, fragment", [
    ("n_envs=0", "config key 'n_envs': got 0 (int), expected an integer >= 1"),
    ("n_env=4", "--set 'n_env=4': unknown training config key 'n_env'"),
    ("stages.nosuch.n_epochs=2", "--set 'stages.nosuch.n_epochs=2': no stage 'nosuch'"),
])
def test_train_cli__bad_set_is_one_error_line_and_exit_2(
    capsys, tmp_path, no_training, setting, fragment
):
    recipe = str(Path(__file__).resolve().parents[2] / "configs" / "recipes" / "2p.yaml")
    # a run directory of its own: the default runs/default may hold the user's `make train`
    line = _run_failing(capsys, ["--config", recipe, "--set", setting,
                                 "--run-dir", str(tmp_path / "run")])
    assert fragment in line
    assert not no_training


def test_train_cli__bad_set_is_named_before_a_run_directory_that_holds_a_run(
    capsys, tmp_path, no_training
):
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.zip").write_bytes(b"")
    line = _run_failing(capsys, ["--set", "n_env=4", "--run-dir", str(run_dir)])
    assert "--set 'n_env=4': unknown training config key 'n_env'" in line


def _tiny_staged_config(folder: Path) -> Path:
    """Two stages of 512 steps on a 16-unit network: a run of a few seconds."""
    config = folder / "staged.yaml"
    config.write_text(
        "n_envs: 16\nn_steps: 32\nbatch_size: 512\nn_epochs: 1\nnet_arch: [16]\n"
        "eval_interval: 512\neval_games: 2\neval_opponents: [random]\n"
        "checkpoint_interval: 512\nimitation_games: 0\n"
        "stages:\n  - {name: first, total_timesteps: 512}\n"
        "  - {name: second, total_timesteps: 512}\n")
    return config


@pytest.mark.slow  # a subprocess training run
def test_train_cli__a_closed_stdout_pipe_exits_141_without_a_traceback(
    tmp_path, run_into_closed_pipe
):
    config = _tiny_staged_config(tmp_path)
    completed = run_into_closed_pipe(
        "agents.cli.train",
        ["--config", str(config), "--run-dir", str(tmp_path / "run"), "--no-progress"],
        tmp_path,
    )
    assert completed.returncode == 141, completed.stderr
    assert "Traceback" not in completed.stderr and "BrokenPipeError" not in completed.stderr


def test_train_cli__no_progress_prints_evaluation_stage_and_checkpoint_lines(tmp_path, capsys):
    """Without the bar (output to a log file), what the bar would show comes a line each."""
    config = _tiny_staged_config(tmp_path)
    code = train_cli.main(["--config", str(config), "--run-dir", str(tmp_path / "run"),
                           "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "stage 2/2: second" in out
    assert out.count("win rate vs random=") == 2
    checkpoint_lines = [line for line in out.splitlines() if "] checkpoint " in line]
    assert checkpoint_lines and all("steps/s, stage " in line for line in checkpoint_lines)
    assert "\r" not in out  # no bar

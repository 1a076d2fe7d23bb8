"""Sweeps: space validation, the pruning hook, tiny sweeps in process and on Ray, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agents.cli.sweep import main as sweep_main
from agents.ppo.checkpoint import read_metadata
from agents.sweep.space import SweepSpaceError, load_sweep_space
from agents.training.config import TrainConfig, load_train_config

ROOT = Path(__file__).resolve().parents[2]
TINY_SPACE = ROOT / "configs" / "sweeps" / "tiny.yaml"
TINY_BASE = yaml.safe_load(TINY_SPACE.read_text())["base"]


def _run_cli(argv: list[str]) -> int:
    return sweep_main([str(a) for a in argv])


@pytest.fixture(scope="module")
def in_process_sweep(tmp_path_factory):
    """Two tiny trials in this process, with ray made unimportable."""
    sweep_dir = tmp_path_factory.mktemp("sweep") / "in_process"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "ray", None)  # any `import ray` now raises ImportError
        code = _run_cli(["--space", TINY_SPACE, "--trials", 2, "--sweep-dir", sweep_dir,
                         "--seed", 3])
    return code, sweep_dir, json.loads((sweep_dir / "summary.json").read_text())


@pytest.fixture(scope="module")
def ray_sweep(tmp_path_factory):
    """The same sweep with two workers on local Ray."""
    sweep_dir = tmp_path_factory.mktemp("sweep") / "ray"
    code = _run_cli(["--space", TINY_SPACE, "--trials", 2, "--workers", 2, "--sweep-dir",
                     sweep_dir, "--seed", 3])
    return code, sweep_dir, json.loads((sweep_dir / "summary.json").read_text())


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------- the space


def test_load_sweep_space__shipped_spaces_load():
    for path in sorted((ROOT / "configs" / "sweeps").glob("*.yaml")):
        space = load_sweep_space(path)
        assert space.params, path
        space.base_config()  # the base is a valid TrainConfig


def test_load_sweep_space__base_config_path_is_relative_to_the_space_file():
    space = load_sweep_space(ROOT / "configs" / "sweeps" / "ppo_2p.yaml")
    assert space.base["imitation_games"] == 3000  # from configs/default.yaml
    assert space.base["total_timesteps"] == 1_000_000  # from its own base


def test_sweep_space__categorical_lists_round_trip_through_labels():
    space = load_sweep_space(ROOT / "configs" / "sweeps" / "ppo_2p.yaml")
    net_arch = next(p for p in space.params if p.name == "net_arch")
    labels = net_arch.distribution().choices
    assert all(isinstance(label, str) for label in labels)
    assert [net_arch.decode(label) for label in labels] == list(net_arch.choices)


@pytest.mark.parametrize(
    "text, named",
    [
        ("params: {n_epoch: {type: int, low: 1, high: 2}}", "unknown TrainConfig key 'n_epoch'"),
        ("params: {n_epochs: {type: uniform, low: 1, high: 2}}", "'params.n_epochs.type'"),
        ("params: {n_epochs: {type: int, low: 3, high: 2}}", "'params.n_epochs': low 3"),
        ("params: {n_epochs: {type: int, low: 0, high: 2}}", "'params.n_epochs.low'"),
        ("params: {n_epochs: {type: float, low: 1.0, high: 2.0}}", "does not suit 'n_epochs'"),
        ("params: {learning_rate: {type: float, low: 0.0, high: 1.0, log: true}}",
         "'params.learning_rate.low'"),
        ("params: {learning_rate: {type: float, low: 1e-4, high: 1.0}}", "write 1.0e-4"),
        ("params: {activation: {type: categorical, choices: [relu, gelu]}}",
         "'params.activation.choices[1]'"),
        ("params: {activation: {type: categorical, choices: []}}", "'params.activation.choices'"),
        ("params: {n_epochs: {type: int, low: 1, high: 2, sigma: 3}}", "'sigma'"),
        ("params: {}", "'params'"),
        ("parms: {}", "unknown key 'parms' (did you mean 'params'?)"),
        ("objective: {metric: reward}\nparams: {n_epochs: {type: int, low: 1, high: 2}}",
         "'objective.metric'"),
        ("pruner: {type: median, patience: 2}\nparams: {n_epochs: {type: int, low: 1, high: 2}}",
         "'patience'"),
        ("pruner: {type: threshold}\nparams: {n_epochs: {type: int, low: 1, high: 2}}",
         "'pruner'"),
        ("base: {n_envs: 0}\nparams: {n_epochs: {type: int, low: 1, high: 2}}", "'n_envs'"),
        ("base_config: missing.yaml\nparams: {n_epochs: {type: int, low: 1, high: 2}}",
         "'base_config'"),
        ("- a list", "mapping"),
    ],
)
def test_load_sweep_space__bad_space_is_one_line_naming_the_key(tmp_path, text, named):
    with pytest.raises(SweepSpaceError) as caught:
        load_sweep_space(_write(tmp_path, text))
    message = str(caught.value)
    assert named in message
    assert "\n" not in message


def test_load_sweep_space__combination_is_left_to_the_trial(tmp_path):
    # n_envs 2 alone breaks batch_size 256 (> 2 * 64), but batch_size is swept too
    text = ("base: {n_envs: 8, n_steps: 64, batch_size: 256}\nparams:\n"
            "  n_envs: {type: int, low: 2, high: 8}\n"
            "  batch_size: {type: categorical, choices: [64, 128]}\n")
    assert len(load_sweep_space(_write(tmp_path, text)).params) == 2
    alone = "base: {n_envs: 8, n_steps: 64, batch_size: 256}\nparams:\n" \
            "  n_envs: {type: int, low: 2, high: 8}\n"
    with pytest.raises(SweepSpaceError, match="'params.n_envs.low'.*batch_size"):
        load_sweep_space(_write(tmp_path, alone))


# ---------------------------------------------------------------- the pruning hook


class FakeTrial:
    """Optuna's trial interface, with a pruner that says yes from a given step on."""

    def __init__(self, prune_from: int):
        self.prune_from = prune_from
        self.reports: list[tuple[int, float]] = []

    def report(self, value: float, step: int) -> None:
        self.reports.append((step, value))

    def should_prune(self) -> bool:
        return self.reports[-1][0] >= self.prune_from


def test_pruning_hook__reports_every_score_and_stops_once_pruned():
    from agents.sweep.runner import PruningHook

    hook = PruningHook(FakeTrial(prune_from=200), total_timesteps=1000)
    assert hook(100, 0.25) is False
    assert hook(200, 0.5) is True
    assert hook(300, 0.75) is True  # stays stopped
    assert hook.trial.reports == [(100, 0.25), (200, 0.5), (300, 0.75)]
    assert (hook.pruned_at, hook.last_score) == (200, 0.75)


def test_pruning_hook__never_prunes_at_the_last_step():
    from agents.sweep.runner import PruningHook

    hook = PruningHook(FakeTrial(prune_from=0), total_timesteps=1000)
    assert hook(1000, 0.5) is False
    assert hook.pruned_at is None


def test_trainer__on_evaluation_true_stops_the_run_politely(tmp_path):
    from agents.sweep.runner import PruningHook
    from agents.training.trainer import train

    config = TrainConfig(**{**TINY_BASE, "total_timesteps": 2048, "progress": False})
    hook = PruningHook(FakeTrial(prune_from=0), config.total_timesteps)
    summary = train(config, tmp_path, on_evaluation=hook)
    assert hook.pruned_at == 512  # the first evaluation
    # the evaluation fell on the rollout's last step: its update, then a checkpoint at
    # the next rollout start, and no more training or evaluation
    assert summary["interrupted"] and summary["timesteps"] == 512
    assert read_metadata(tmp_path / "checkpoints" / "last.zip")["timesteps"] == 512
    lines = (tmp_path / "eval.jsonl").read_text().splitlines()
    assert [json.loads(line)["timesteps"] for line in lines] == [512]


def test_trial_on_worker__prunes_through_the_journal(tmp_path):
    """A worker process's path: the trial reached through the journal file, pruned there."""
    import optuna

    from agents.sweep.runner import JOURNAL, PRUNED, STUDY_NAME, _storage, _trial_on_worker

    pruner = {"type": "threshold", "lower": 2.0, "upper": None}  # every score is below 2
    study = optuna.create_study(study_name=STUDY_NAME, storage=_storage(tmp_path / JOURNAL))
    trial = study.ask()
    config = TrainConfig(**{**TINY_BASE, "total_timesteps": 2048, "progress": False})
    outcome = _trial_on_worker({
        "journal": str(tmp_path / JOURNAL), "pruner": pruner, "metric": "best_score",
        "trial_id": trial._trial_id, "config": config.to_dict(),
        "run_dir": str(tmp_path / "trial_0000"),
    })
    assert outcome["state"] == PRUNED and outcome["timesteps"] < 2048
    assert list(study.trials[0].intermediate_values) == [512]


# ---------------------------------------------------------------- whole sweeps


def test_sweep__tiny_sweep_in_process_writes_summary_and_best_config(in_process_sweep):
    code, sweep_dir, summary = in_process_sweep
    assert code == 0
    assert [t["number"] for t in summary["trials"]] == [0, 1]
    assert {t["state"] for t in summary["trials"]} <= {"complete", "pruned"}
    for trial in summary["trials"]:
        run_dir = Path(trial["run_dir"])
        assert run_dir == sweep_dir / f"trial_{trial['number']:04d}"
        assert list((run_dir / "tb").rglob("events.out.tfevents*"))
        saved = yaml.safe_load((run_dir / "config.yaml").read_text())
        assert saved["seed"] == trial["seed"]
        assert all(saved[key] == value for key, value in trial["params"].items())
        assert trial["evaluations"][0][0] == 512
    assert summary["trials"][0]["seed"] != summary["trials"][1]["seed"]
    best = summary["best_trial"]
    assert summary["best_score"] == max(t["score"] for t in summary["trials"]
                                        if t["state"] == "complete")
    loaded = load_train_config(sweep_dir / "best_config.yaml")
    assert loaded.to_dict() == summary["best_config"]
    trained = yaml.safe_load((sweep_dir / f"trial_{best:04d}" / "config.yaml").read_text())
    assert {**trained, "progress": True} == loaded.to_dict()  # the base's progress setting


@pytest.mark.slow  # Ray
def test_sweep__two_workers_on_ray_sample_what_one_worker_samples(ray_sweep, in_process_sweep):
    code, sweep_dir, summary = ray_sweep
    assert code == 0
    assert summary["workers"] == 2
    assert [t["state"] for t in summary["trials"]] == ["complete", "complete"]
    assert (sweep_dir / "best_config.yaml").is_file()
    # the seeded sampler's first trials do not depend on which results are known yet
    expected = [t["params"] for t in in_process_sweep[2]["trials"]]
    assert [t["params"] for t in summary["trials"]] == expected


def test_sweep__failed_trial_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch, capsys):
    import agents.training.trainer

    def broken_train(*args, **kwargs):
        raise RuntimeError("disk full\nsecond line")

    monkeypatch.setattr(agents.training.trainer, "train", broken_train)
    code = _run_cli(["--space", TINY_SPACE, "--trials", 2, "--sweep-dir", tmp_path / "s"])
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert code == 1  # no trial completed
    assert [t["state"] for t in summary["trials"]] == ["failed", "failed"]
    assert summary["trials"][0]["error"] == "RuntimeError: disk full"  # the first line
    assert summary["best_config"] is None and not (tmp_path / "s" / "best_config.yaml").exists()
    assert "no trial completed" in capsys.readouterr().out


def test_sweep__invalid_sampled_combination_fails_that_trial(tmp_path, monkeypatch):
    import agents.sweep.runner as runner

    monkeypatch.setattr(runner, "execute_trial", lambda *a: pytest.fail("must not train"))
    space = _write(tmp_path, "base: {n_envs: 8, n_steps: 64, batch_size: 64}\nparams:\n"
                             "  n_envs: {type: int, low: 1, high: 1}\n"
                             "  batch_size: {type: categorical, choices: [512]}\n")
    assert _run_cli(["--space", space, "--trials", 1, "--sweep-dir", tmp_path / "s"]) == 1
    trial = json.loads((tmp_path / "s" / "summary.json").read_text())["trials"][0]
    assert trial["state"] == "failed" and "batch_size" in trial["error"]


def _fake_trials(monkeypatch, interrupt_at: int | None = None) -> list[str]:
    """Trials that complete at once (score 0.5), Ctrl-C at call ``interrupt_at``."""
    import agents.sweep.runner as runner

    calls = []

    def fake_trial(trial, config, run_dir, metric):
        calls.append(run_dir)
        if len(calls) == interrupt_at:
            raise KeyboardInterrupt
        return {"state": "complete", "score": 0.5, "timesteps": 1024, "seconds": 0.1,
                "error": None}

    monkeypatch.setattr(runner, "execute_trial", fake_trial)
    return calls


def test_sweep_cli__ctrl_c_prints_finished_trials_and_exits_130(tmp_path, monkeypatch, capsys):
    _fake_trials(monkeypatch, interrupt_at=2)
    code = _run_cli(["--space", TINY_SPACE, "--trials", 5, "--sweep-dir", tmp_path / "s"])
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert code == 130 and summary["interrupted"]
    assert [t["state"] for t in summary["trials"]] == ["complete", "interrupted"]
    assert summary["best_trial"] == 0
    assert "best: trial 0" in capsys.readouterr().out


def test_sweep_cli__resume_continues_a_stopped_sweep_to_the_total(tmp_path, monkeypatch):
    _fake_trials(monkeypatch, interrupt_at=2)
    argv = ["--space", TINY_SPACE, "--sweep-dir", tmp_path / "s", "--seed", 4]
    assert _run_cli([*argv, "--trials", 5]) == 130
    calls = _fake_trials(monkeypatch)
    assert _run_cli([*argv, "--trials", 4, "--resume"]) == 0
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    trials = summary["trials"]
    assert [t["number"] for t in trials] == [0, 1, 2, 3] and len(calls) == 2
    assert [t["state"] for t in trials] == ["complete", "interrupted", "complete", "complete"]
    assert not summary["interrupted"] and summary["trials_requested"] == 4
    # the reseeded sampler does not replay the first trials' draws
    assert trials[2]["params"] != trials[0]["params"]
    assert calls[0] == str(tmp_path / "s" / "trial_0002")


def test_sweep__resume_fails_a_trial_left_running_in_the_journal(tmp_path, monkeypatch):
    import optuna

    from agents.sweep.runner import JOURNAL, STUDY_NAME, _storage

    _fake_trials(monkeypatch)
    argv = ["--space", TINY_SPACE, "--sweep-dir", tmp_path / "s", "--seed", 4]
    assert _run_cli([*argv, "--trials", 1]) == 0
    # a sweep killed outright: its last trial asked for, never told, not in the summary
    study = optuna.load_study(study_name=STUDY_NAME, storage=_storage(tmp_path / "s" / JOURNAL))
    study.ask()
    assert _run_cli([*argv, "--trials", 3, "--resume"]) == 0
    trials = json.loads((tmp_path / "s" / "summary.json").read_text())["trials"]
    assert [t["state"] for t in trials] == ["complete", "interrupted", "complete"]
    assert "stopped while it ran" in trials[1]["error"]
    states = [t.state for t in study.get_trials(deepcopy=False)]
    assert states[1] == optuna.trial.TrialState.FAIL


def test_sweep_cli__resume_refuses_what_it_cannot_continue(tmp_path, monkeypatch, capsys):
    _fake_trials(monkeypatch)
    argv = ["--space", TINY_SPACE, "--sweep-dir", tmp_path / "s", "--trials", 2]
    assert _run_cli([*argv, "--resume"]) == 2
    assert "holds no sweep" in capsys.readouterr().err
    assert _run_cli(argv) == 0
    assert _run_cli([*argv, "--seed", 9, "--resume"]) == 2
    assert "started with --seed 0, not 9" in capsys.readouterr().err
    other = _write(tmp_path, TINY_SPACE.read_text() + "\n# another file\n")
    assert _run_cli(["--space", other, *argv[2:], "--resume"]) == 2
    err = capsys.readouterr().err
    assert "is not the space file" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--trials", 0], "trials"),
        (["--workers", 0], "workers"),
        (["--seed", -1], "seed"),
    ],
)
def test_sweep_cli__bad_counts_exit_2(tmp_path, capsys, argv, named):
    code = _run_cli(["--space", TINY_SPACE, "--trials", 1, "--sweep-dir", tmp_path / "s", *argv])
    err = capsys.readouterr().err
    assert code == 2 and named in err and err.count("\n") == 1


def test_sweep_cli__bad_space_exits_2_in_one_line(tmp_path, capsys):
    space = _write(tmp_path, "params: {n_epoch: {type: int, low: 1, high: 2}}")
    assert _run_cli(["--space", space, "--trials", 1, "--sweep-dir", tmp_path / "s"]) == 2
    err = capsys.readouterr().err
    assert "'n_epoch'" in err and err.count("\n") == 1
    assert not (tmp_path / "s").exists()


def test_sweep_cli__used_sweep_dir_exits_2(tmp_path, capsys):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "summary.json").write_text("{}")
    assert _run_cli(["--space", TINY_SPACE, "--trials", 1, "--sweep-dir", tmp_path / "s"]) == 2
    assert "already holds a sweep" in capsys.readouterr().err


# ---------------------------------------------------------------- damaged sweeps (#34)


def _stopped_sweep(tmp_path, monkeypatch) -> tuple[list, Path]:
    """A sweep of 2 trials run to the end, and the argv that resumes it to 3."""
    _fake_trials(monkeypatch)
    argv = ["--space", TINY_SPACE, "--sweep-dir", tmp_path / "s", "--seed", 4]
    assert _run_cli([*argv, "--trials", 2]) == 0
    return [*argv, "--trials", 3, "--resume"], tmp_path / "s"


def _files(sweep_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(sweep_dir.iterdir()) if p.is_file()}


def _refused_in_one_line(argv, capsys) -> str:
    code = _run_cli(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert len(err) < 600
    return err


@pytest.mark.parametrize(
    "summary, words",
    [
        ('{"seed": 4, "trials": [{"number": 0, "sta', "summary.json' is damaged"),
        ("\x00\x00\x00", "summary.json' is damaged"),
        ('["not", "a", "summary"]', "is not a sweep summary (a list, not a mapping)"),
        ('{"seed": 4, "trials": [{"number": 0, "bogus": 1}]}', "trial entry 0 is not a trial"),
        ('{"seed": "4"}', "its seed is not an integer"),
    ],
)
def test_sweep_cli__resume_with_a_damaged_summary_is_one_line_and_changes_nothing(
        tmp_path, monkeypatch, capsys, summary, words):
    argv, sweep_dir = _stopped_sweep(tmp_path, monkeypatch)
    (sweep_dir / "summary.json").write_text(summary)
    before = _files(sweep_dir)
    err = _refused_in_one_line(argv, capsys)
    assert words in err and "move it away to resume from optuna.journal alone" in err
    assert _files(sweep_dir) == before


def test_sweep_cli__resume_without_the_summary_rebuilds_it_from_the_journal(tmp_path,
                                                                           monkeypatch):
    argv, sweep_dir = _stopped_sweep(tmp_path, monkeypatch)
    (sweep_dir / "summary.json").unlink()  # what the message above advises
    assert _run_cli(argv) == 0
    trials = json.loads((sweep_dir / "summary.json").read_text())["trials"]
    assert [t["state"] for t in trials] == ["complete"] * 3


def test_sweep_cli__resume_with_a_journal_cut_mid_record_is_one_line_and_changes_nothing(
        tmp_path, monkeypatch, capsys):
    argv, sweep_dir = _stopped_sweep(tmp_path, monkeypatch)
    journal = sweep_dir / "optuna.journal"
    whole = journal.read_bytes()
    last_line_start = whole.rstrip(b"\n").rfind(b"\n") + 1
    journal.write_bytes(whole[:-10])  # killed while writing its last record
    before = _files(sweep_dir)
    err = _refused_in_one_line(argv, capsys)
    assert "ends with a record cut short" in err
    assert f"truncate -s {last_line_start} " in err
    assert _files(sweep_dir) == before
    # cut as the message says, the sweep resumes
    journal.write_bytes(whole[:last_line_start])
    assert _run_cli(argv) == 0


def test_sweep_cli__resume_with_a_damaged_journal_line_is_one_line(tmp_path, monkeypatch,
                                                                   capsys):
    argv, sweep_dir = _stopped_sweep(tmp_path, monkeypatch)
    journal = sweep_dir / "optuna.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([lines[0], b"{garbage\n", *lines[1:]]))
    before = _files(sweep_dir)
    assert "line 2 is not a journal record" in _refused_in_one_line(argv, capsys)
    assert _files(sweep_dir) == before


@pytest.mark.parametrize("resume", [False, True])
def test_sweep_cli__sweep_dir_that_is_a_file_is_one_line(tmp_path, capsys, resume):
    path = tmp_path / "s"
    path.write_text("mine")
    argv = ["--space", TINY_SPACE, "--trials", 1, "--sweep-dir", path]
    err = _refused_in_one_line([*argv, *(["--resume"] if resume else [])], capsys)
    assert "sweep directory" in err and "is a file, not a directory" in err
    assert path.read_text() == "mine"


def test_sweep_cli__sweep_dir_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    err = _refused_in_one_line(["--space", TINY_SPACE, "--trials", 1, "--sweep-dir",
                                tmp_path / "f" / "s"], capsys)
    assert "cannot be created" in err


@pytest.mark.parametrize(
    "choices, words",
    [
        ("[2020-01-01, official]", "choices[0]': got '2020-01-01', which the base config "
                                   "refuses"),
        ("[!!set {a, b}, official]", "the tag 'set' is not allowed"),
        ("[!!timestamp 2020-01-01, official]", "the tag 'timestamp' is not allowed"),
    ],
)
def test_sweep_cli__categorical_choice_that_is_a_date_or_set_is_one_line(tmp_path, capsys,
                                                                         choices, words):
    space = _write(tmp_path, f"params: {{rules: {{type: categorical, choices: {choices}}}}}\n")
    err = _refused_in_one_line(["--space", space, "--trials", 1, "--sweep-dir", tmp_path / "s"],
                               capsys)
    assert words in err
    assert not (tmp_path / "s").exists()


def test_sweep_space__choices_must_be_plain_data(tmp_path):
    from agents.sweep.space import _read_param

    with pytest.raises(SweepSpaceError, match=r"choices\[0\]': got a set, expected plain data"):
        _read_param("net_arch", {"type": "categorical", "choices": [{1, 2}]},
                    TrainConfig().to_dict(), "sweep space 'x'", {"net_arch"})


@pytest.mark.slow  # subprocess run
def test_layering__training_never_imports_optuna_or_ray():
    probe = ("import sys, agents.training.trainer, agents.cli.train, agents.cli.sweep\n"
             "print([m for m in ('optuna', 'ray') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1] == "[]"

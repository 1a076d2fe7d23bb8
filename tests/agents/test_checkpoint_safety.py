"""Checkpoints carry weights and JSON only: no loader runs code from the file (issue #9).

The hostile checkpoints here carry a pickle whose ``__reduce__`` runs ``os.system("touch
MARKER")``; every loader must refuse or ignore it, and the marker must never appear.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import re
import shlex
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from checkpoint_edits import rewrite

from agents.cli import evaluate
from agents.ppo.checkpoint import (
    LEGACY_FORMAT,
    LEGACY_OPTIMIZER_MEMBER,
    META_MEMBER,
    OPTIMIZER_MEMBER,
    POLICY_MEMBER,
    CheckpointError,
    build_policy,
    checkpoint_metadata,
    load_policy,
    read_member,
    read_metadata,
    restore_model,
    save_checkpoint,
    save_network_only,
)
from agents.ppo.policy import load_ppo_agent
from agents.registry import make_agent
from skyjo_env.core.rules import SkyjoRules

RULES = SkyjoRules()
ROOT = Path(__file__).resolve().parents[2]


class _Payload:
    """Unpickling this runs a shell command that creates ``marker``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def _metadata(features: str = "raw") -> dict:
    return checkpoint_metadata(
        RULES, 0, policy={"net_arch": [16], "activation": "tanh", "features": features}
    )


def _trained_model(metadata: dict, seed: int = 0) -> SimpleNamespace:
    """A model-like object whose weights and Adam moments are not the initial ones."""
    torch.manual_seed(seed)
    policy = build_policy(metadata)
    observations = torch.rand(32, metadata["observation_size"])
    for _ in range(2):
        values = policy.predict_values(observations)
        policy.optimizer.zero_grad()
        values.pow(2).mean().backward()
        policy.optimizer.step()
    return SimpleNamespace(policy=policy)


def _rewrite(path: Path, replace: dict[str, bytes], drop: tuple[str, ...] = (),
             resign: bool = True) -> None:
    """Rewrite the zip at ``path`` with members replaced, added or dropped, its checksums
    recomputed (``resign``: the checks behind them are what is tested)."""
    rewrite(path, replace, drop, resign=resign)


def _sb3_data_member(marker: Path) -> bytes:
    """An SB3 ``data`` JSON whose ``:serialized:`` entries SB3's ``load`` would unpickle."""
    payload = base64.b64encode(pickle.dumps(_Payload(marker))).decode()
    entry = {":type:": "<class 'builtins.object'>", ":serialized:": payload}
    return json.dumps({"policy_class": entry, "observation_space": entry, "n_envs": 1}).encode()


def _hostile_checkpoint(tmp_path: Path, legacy: bool) -> tuple[Path, Path]:
    """A valid checkpoint (new or old format) plus a hostile ``data`` member."""
    marker = tmp_path / "pwned"
    path = save_checkpoint(_trained_model(_metadata()), tmp_path / "evil.zip", _metadata())
    replace = {"data": _sb3_data_member(marker)}
    drop: tuple[str, ...] = ()
    if legacy:  # what MaskablePPO.save wrote, with our metadata beside it
        meta = json.loads(read_member(path, META_MEMBER))
        meta["format"] = LEGACY_FORMAT
        meta["config"] = meta.pop("policy")
        del meta["integrity"]  # written before checksums
        replace[META_MEMBER] = json.dumps(meta).encode()
        replace[LEGACY_OPTIMIZER_MEMBER] = read_member(path, OPTIMIZER_MEMBER)
        drop = (OPTIMIZER_MEMBER,)
    _rewrite(path, replace, drop)
    return path, marker


def test_hostile_checkpoint__payload_runs_under_sb3_own_loader(tmp_path):
    # proves the fixture is live, so the tests below can fail
    from stable_baselines3.common.save_util import load_from_zip_file

    path, marker = _hostile_checkpoint(tmp_path, legacy=True)
    try:
        load_from_zip_file(path, device="cpu")
    except Exception:  # the payload's return value is no policy class; it ran already
        pass
    assert marker.exists()


@pytest.mark.parametrize("legacy", [False, True], ids=["format2", "format1"])
def test_loaders__ignore_pickled_data_member(tmp_path, legacy):
    path, marker = _hostile_checkpoint(tmp_path, legacy)
    agent = load_ppo_agent(path, RULES)
    assert agent.act(np.zeros((1, 108), np.float32), np.ones((1, 27), bool)).shape == (1,)
    make_agent(f"ppo:{path}", RULES, seed=0)
    load_policy(path)
    restore_model(path, _trained_model(_metadata(), seed=1))
    status = evaluate.main(
        ["--agents", f"ppo:{path}", "random", "--games", "2", "--seed", "0", "--no-progress",
         "--no-ratings"]
    )
    assert status == 0
    assert not marker.exists()


def _torch_saved_payload(marker: Path) -> bytes:
    buffer = io.BytesIO()
    torch.save(_Payload(marker), buffer)
    return buffer.getvalue()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("member", [POLICY_MEMBER, OPTIMIZER_MEMBER])
@pytest.mark.parametrize("kind", ["torch_save", "raw_pickle"])
def test_loaders__refuse_pickled_tensor_member(tmp_path, member, kind):
    marker = tmp_path / "pwned"
    path = save_checkpoint(_trained_model(_metadata()), tmp_path / "evil.zip", _metadata())
    content = _torch_saved_payload(marker) if kind == "torch_save" else pickle.dumps(_Payload(marker))
    _rewrite(path, {member: content})
    loaders = [lambda: restore_model(path, _trained_model(_metadata(), seed=1))]
    if member == POLICY_MEMBER:
        loaders += [lambda: load_policy(path), lambda: load_ppo_agent(path, RULES)]
    for load in loaders:
        with pytest.raises(CheckpointError, match=rf"evil\.zip.*{re.escape(member)}.*not a plain tensor"):
            load()
    status = evaluate.main(["--agents", f"ppo:{path}", "random", "--games", "2", "--no-progress"])
    assert status == (2 if member == POLICY_MEMBER else 0)
    assert not marker.exists()


def test_save_checkpoint__writes_only_json_and_tensors(tmp_path):
    path = save_checkpoint(
        _trained_model(_metadata()), tmp_path / "run", _metadata(),
        extra_members={"training_state.json": b'{"episodes": 3}'},
    )
    assert path.name == "run.zip"
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == sorted(
            [META_MEMBER, POLICY_MEMBER, OPTIMIZER_MEMBER, "training_state.json"]
        )
    metadata = read_metadata(path)
    assert metadata["format"] == "skyjo-rl-ppo/3"
    assert metadata["policy"] == {"net_arch": [16], "activation": "tanh", "features": "raw"}
    assert read_member(path, "training_state.json") == b'{"episodes": 3}'


def test_save_network_only__drops_the_resume_state_and_keeps_the_weights(tmp_path):
    run = save_checkpoint(
        _trained_model(_metadata()), tmp_path / "last", _metadata(),
        extra_members={"training_state.json": b'{"episodes": 3}'},
    )
    shipped = save_network_only(run, tmp_path / "model")
    assert shipped.name == "model.zip"
    with zipfile.ZipFile(shipped) as archive:
        assert sorted(archive.namelist()) == sorted([META_MEMBER, POLICY_MEMBER, OPTIMIZER_MEMBER])
    for member in (POLICY_MEMBER, OPTIMIZER_MEMBER):
        assert read_member(shipped, member) == read_member(run, member)
    before, after = read_metadata(run), read_metadata(shipped)
    assert set(after["integrity"]["members"]) == {POLICY_MEMBER, OPTIMIZER_MEMBER}
    assert {k: v for k, v in after.items() if k != "integrity"} == {
        k: v for k, v in before.items() if k != "integrity"}


def test_save_network_only__refuses_a_damaged_source_and_writes_nothing(tmp_path):
    run = save_checkpoint(_trained_model(_metadata()), tmp_path / "last", _metadata())
    _rewrite(run, {POLICY_MEMBER: b"not the saved tensors"}, resign=False)  # a damaged file
    with pytest.raises(CheckpointError, match=r"last\.zip"):
        save_network_only(run, tmp_path / "model.zip")
    assert not (tmp_path / "model.zip").exists()


def test_save_checkpoint__derives_policy_entry_from_config(tmp_path):
    config = {"net_arch": [16], "activation": "tanh", "features": "raw", "seed": 3}
    metadata = checkpoint_metadata(RULES, 5, config=config)
    path = save_checkpoint(_trained_model({**metadata, "policy": config}), tmp_path / "c", metadata)
    assert read_metadata(path)["policy"] == {"net_arch": [16], "activation": "tanh", "features": "raw"}


def test_save_checkpoint__refuses_metadata_that_does_not_match_the_model(tmp_path):
    wrong = checkpoint_metadata(RULES, 0, policy={"net_arch": [32], "activation": "tanh",
                                                  "features": "raw"})
    with pytest.raises(CheckpointError, match="does not fit the architecture|needs"):
        save_checkpoint(_trained_model(_metadata()), tmp_path / "c.zip", wrong)
    assert not (tmp_path / "c.zip").exists()


@pytest.mark.parametrize("features", ["raw", "grid"])
def test_load_policy__round_trip_gives_identical_actions(tmp_path, features):
    model = _trained_model(_metadata(features))
    path = save_checkpoint(model, tmp_path / "c.zip", _metadata(features))
    loaded = load_policy(path)
    rng = np.random.default_rng(0)
    observations = torch.as_tensor(rng.random((256, 108), dtype=np.float32))
    masks = rng.random((256, 27)) < 0.5
    masks[:, 12] = True
    model.policy.set_training_mode(False)
    with torch.no_grad():
        expected = model.policy.get_distribution(observations, action_masks=masks).distribution.logits
        got = loaded.get_distribution(observations, action_masks=masks).distribution.logits
    assert torch.equal(expected, got)


def test_restore_model__restores_weights_and_optimizer_state(tmp_path):
    saved = _trained_model(_metadata(), seed=0)
    path = save_checkpoint(saved, tmp_path / "c.zip", _metadata())
    target = _trained_model(_metadata(), seed=1)
    restore_model(path, target)
    for key, value in saved.policy.state_dict().items():
        assert torch.equal(value, target.policy.state_dict()[key]), key
    expected, got = saved.policy.optimizer.state_dict(), target.policy.optimizer.state_dict()
    assert expected["state"].keys() == got["state"].keys() and expected["state"]
    for index, entry in expected["state"].items():
        for name, value in entry.items():
            assert torch.equal(value, got["state"][index][name]), (index, name)


def test_restore_model__refuses_other_architecture_and_leaves_model_unchanged(tmp_path):
    path = save_checkpoint(_trained_model(_metadata()), tmp_path / "c.zip", _metadata())
    other = checkpoint_metadata(RULES, 0, policy={"net_arch": [8, 8], "activation": "tanh",
                                                  "features": "raw"})
    model = _trained_model(other)
    before = {key: value.clone() for key, value in model.policy.state_dict().items()}
    with pytest.raises(CheckpointError, match=r"c\.zip.*policy\.pth"):
        restore_model(path, model)
    for key, value in before.items():
        assert torch.equal(value, model.policy.state_dict()[key])


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _set_meta(**changes):
    def edit(path: Path) -> None:
        meta = json.loads(read_member(path, META_MEMBER))
        meta.update(changes)
        _rewrite(path, {META_MEMBER: json.dumps(meta).encode()})

    return edit


def _nan_weights(path: Path) -> None:
    state = torch.load(io.BytesIO(read_member(path, POLICY_MEMBER)), weights_only=True)
    next(iter(state.values())).fill_(float("nan"))
    buffer = io.BytesIO()
    torch.save(state, buffer)
    _rewrite(path, {POLICY_MEMBER: buffer.getvalue()})


@pytest.mark.parametrize(
    "damage, message",
    [
        (_truncate, "corrupt"),
        (lambda p: _rewrite(p, {}, drop=(POLICY_MEMBER,), resign=False), "no member 'policy.pth'"),
        (lambda p: _rewrite(p, {POLICY_MEMBER: b"not torch"}), "not a plain tensor file"),
        (_set_meta(policy={"net_arch": [32], "activation": "tanh", "features": "raw"}), "needs"),
        (_set_meta(policy={"net_arch": [10**9], "activation": "tanh", "features": "raw"}),
         "net_arch"),
        (_set_meta(policy={"net_arch": [16], "activation": "gelu", "features": "raw"}),
         "activation"),
        (_set_meta(policy=None), "no network description"),
        (_set_meta(format="skyjo-rl-ppo/9"), "format"),
        (_set_meta(observation_size=7), "observation"),
        (_nan_weights, "non-finite"),
    ],
    ids=["truncated", "no_policy", "garbage_policy", "wrong_shapes", "huge_net",
         "bad_activation", "no_architecture", "unknown_format", "bad_obs_size", "nan_weights"],
)
def test_load_policy__bad_checkpoint_raises_one_line_checkpoint_error(tmp_path, damage, message):
    path = save_checkpoint(_trained_model(_metadata()), tmp_path / "c.zip", _metadata())
    damage(path)
    with pytest.raises(CheckpointError, match=message) as caught:
        load_policy(path)
    assert "c.zip" in str(caught.value) and "\n" not in str(caught.value)


def test_read_member__missing_member_is_named(tmp_path):
    path = save_checkpoint(_trained_model(_metadata()), tmp_path / "c.zip", _metadata())
    with pytest.raises(CheckpointError, match="no member 'training_state.npz'"):
        read_member(path, "training_state.npz")


def test_build_policy__leaves_global_torch_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    build_policy(_metadata("grid"))
    assert torch.equal(torch.rand(3), expected)


def test_package__never_unpickles_checkpoints():
    unsafe = re.compile(
        r"PPO\.load\(|import cloudpickle|cloudpickle\.loads?\(|pickle\.loads?\(|"
        r"weights_only\s*=\s*False|load_from_zip_file"
    )
    sources = [*ROOT.joinpath("agents").rglob("*.py"), *ROOT.joinpath("skyjo_env").rglob("*.py"),
               *ROOT.glob("*.py")]
    offending = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if unsafe.search(line)
    ]
    assert sources and offending == []


# ------------------------------------------------------------------ hostile files (#34 A)


def _saved(tmp_path: Path, name: str = "c.zip") -> Path:
    return save_checkpoint(_trained_model(_metadata()), tmp_path / name, _metadata())


def _one_line_error(call, match: str) -> str:
    with pytest.raises(CheckpointError, match=match) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("net_arch", [[8192, 8192], [16384] * 32],
                         ids=["8192x8192", "16384x32"])
def test_read_metadata__network_above_budget_is_refused_before_anything_is_built(
        tmp_path, monkeypatch, net_arch):
    # before: [8192, 8192] took 36 s and 1.7 GB to build; [16384]*32 was OOM-killed
    path = _saved(tmp_path)
    _set_meta(policy={"net_arch": net_arch, "activation": "tanh", "features": "raw"})(path)
    from sb3_contrib.common.maskable import policies

    def never(*args, **kwargs):
        raise AssertionError("a network was built")

    monkeypatch.setattr(policies.MaskableActorCriticPolicy, "__init__", never)
    for load in (lambda: read_metadata(path), lambda: load_policy(path),
                 lambda: build_policy(json.loads(read_member(path, META_MEMBER)), path)):
        message = _one_line_error(load, "parameters: at most 16,777,216 are loaded")
        assert "c.zip" in message


def test_loaders__every_loader_refuses_an_oversized_network_in_one_line(tmp_path):
    from agents.ppo.checkpoint import check_initial_network, load_policy_weights
    from agents.registry import AgentSpecError

    path = _saved(tmp_path)
    _set_meta(policy={"net_arch": [8192, 8192], "activation": "tanh", "features": "raw"})(path)
    policy = build_policy(_metadata())
    loaders = {
        "load_policy": lambda: load_policy(path),
        "load_ppo_agent": lambda: load_ppo_agent(path, RULES),
        "restore_model": lambda: restore_model(path, _trained_model(_metadata())),
        "init_from": lambda: check_initial_network(path, RULES, _metadata()["policy"]),
        "warm start weights": lambda: load_policy_weights(path, policy, widen=True),
    }
    for name, load in loaders.items():
        assert "c.zip" in _one_line_error(load, "parameters"), name
    for spec in (f"ppo:{path}", f"search(leaf=critic):ppo:{path}"):  # skyjo-play, evaluate,
        with pytest.raises(AgentSpecError, match="parameters") as caught:  # Ray workers
            make_agent(spec, RULES, seed=0)
        assert "\n" not in str(caught.value)


def test_read_metadata__huge_or_deeply_nested_metadata_is_one_line(tmp_path):
    path = _saved(tmp_path)
    meta = json.loads(read_member(path, META_MEMBER))
    _rewrite(path, {META_MEMBER: json.dumps({**meta, "pad": "x" * (2 << 20)}).encode()})
    _one_line_error(lambda: read_metadata(path), "skyjo_meta.json' is 2098.* bytes, more than the 1048576")
    for depth in (100, 100_000):  # the json module's own guard is at about 1000
        nested = "[" * depth + "]" * depth
        text = json.dumps(meta)[:-1] + f', "deep": {nested}}}'
        _rewrite(path, {META_MEMBER: text.encode()}, resign=False)
        _one_line_error(lambda: read_metadata(path), "nested more than 32 levels deep")


def test_read_metadata__edited_activation_no_longer_matches_its_tensors(tmp_path):
    # before: metadata saying tanh loaded tensors trained with relu
    path = _saved(tmp_path)
    meta = json.loads(read_member(path, META_MEMBER))
    meta["policy"]["activation"] = "relu"
    _rewrite(path, {META_MEMBER: json.dumps(meta).encode()}, resign=False)
    for load in (lambda: read_metadata(path), lambda: load_policy(path)):
        _one_line_error(load, "skyjo_meta.json does not match the checksum written with it")


def test_read_metadata__checkpoints_written_before_checksums_still_load(tmp_path):
    path = _saved(tmp_path)
    meta = json.loads(read_member(path, META_MEMBER))
    del meta["integrity"]
    meta["format"] = "skyjo-rl-ppo/2"
    _rewrite(path, {META_MEMBER: json.dumps(meta).encode()}, resign=False)
    assert read_metadata(path)["format"] == "skyjo-rl-ppo/2"
    load_policy(path)
    meta["format"] = "skyjo-rl-ppo/3"  # the current format must carry its checksums
    _rewrite(path, {META_MEMBER: json.dumps(meta).encode()}, resign=False)
    _one_line_error(lambda: read_metadata(path), "field 'integrity' is missing")


@pytest.mark.parametrize("member", [POLICY_MEMBER, OPTIMIZER_MEMBER])
def test_read_metadata__a_member_changed_after_saving_fails_its_checksum(tmp_path, member):
    path = _saved(tmp_path)
    other = save_checkpoint(_trained_model(_metadata(), seed=1), tmp_path / "other.zip",
                            _metadata())  # valid tensors, other values
    _rewrite(path, {member: read_member(other, member)}, resign=False)
    _one_line_error(lambda: read_metadata(path), f"member '{member}' does not match the checksum")


@pytest.mark.parametrize("name", ["../evil", "/abs", "dir/x", ".hidden"])
def test_read_metadata__member_names_must_be_plain_file_names(tmp_path, name):
    path = _saved(tmp_path)
    _rewrite(path, {name: b"x"}, resign=False)
    _one_line_error(lambda: read_metadata(path), "expected a plain file name")


def test_read_metadata__oversized_member_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import agents.ppo.checkpoint as checkpoint

    path = _saved(tmp_path)
    monkeypatch.setattr(checkpoint, "MAX_MEMBER_BYTES", 1000)
    _one_line_error(lambda: read_metadata(path), "member 'policy.pth' is .* bytes, more than the 1000")


def test_save_checkpoint__full_disk_is_one_line_and_keeps_the_previous_file(tmp_path, monkeypatch):
    import errno

    path = _saved(tmp_path)
    before = path.read_bytes()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full)
    message = _one_line_error(lambda: _saved(tmp_path),
                              r"cannot write checkpoint '.*c\.zip': No space left on device")
    assert "Traceback" not in message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.zip"]  # no temporary left


def test_restore_model__optimizer_settings_of_the_wrong_kind_are_refused(tmp_path):
    path = _saved(tmp_path)
    state = torch.load(io.BytesIO(read_member(path, OPTIMIZER_MEMBER)), weights_only=True)
    state["param_groups"][0]["lr"] = "abc"  # before: accepted, then a crash mid-training
    buffer = io.BytesIO()
    torch.save(state, buffer)
    _rewrite(path, {OPTIMIZER_MEMBER: buffer.getvalue()})
    _one_line_error(lambda: restore_model(path, _trained_model(_metadata(), seed=1)),
                    "parameter group setting 'lr' is 'abc'")


def test_evaluate__critic_leaf_over_a_checkpoint_whose_config_is_a_list_exits_2(tmp_path, capsys):
    # before: search(leaf=critic) read metadata["config"].get(...) and crashed with a traceback
    path = _saved(tmp_path)
    _set_meta(config=[1, 2])(path)
    status = evaluate.main(["--agents", f"search(leaf=critic):ppo:{path}", "random", "--games",
                            "2", "--no-progress"])
    assert status == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "field 'config' is [1, 2]" in error

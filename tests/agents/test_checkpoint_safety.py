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

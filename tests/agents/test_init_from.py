"""``init_from``: a training run that starts from a saved network instead of the imitation
warm start; every mismatch is a one-line config error before any work."""

from __future__ import annotations

import pytest
import torch

import agents.cli.train as train_cli
from agents.ppo.checkpoint import load_policy, read_metadata
from agents.training.config import TrainConfig, TrainConfigError
from agents.training.imitation import actor_parameters
from agents.training.start import prepare_start
from agents.training.trainer import train

SMALL = dict(
    n_envs=16,
    n_steps=64,
    batch_size=512,
    n_epochs=1,
    eval_games=4,
    net_arch=[32, 32],
    progress=False,
)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A small trained network to start from (no warm start: only PPO moved it)."""
    run_dir = tmp_path_factory.mktemp("source")
    train(TrainConfig(**SMALL, total_timesteps=1024, imitation_games=0, eval_interval=0,
                      checkpoint_interval=1024, seed=1), run_dir)
    return run_dir / "checkpoints" / "last.zip"


def _actor_state(policy) -> dict[str, torch.Tensor]:
    names = {id(parameter) for parameter in actor_parameters(policy)}
    return {name: parameter.detach().clone() for name, parameter in policy.named_parameters()
            if id(parameter) in names}


@pytest.mark.slow  # trains its source network and runs
def test_init_from__a_frozen_actor_keeps_the_source_weights_exactly(source, tmp_path):
    # the value warm-up freezes the actor for its rollouts: over a run shorter than it,
    # the saved actor must be the source's, weight for weight, and the critic must differ
    config = TrainConfig(**SMALL, total_timesteps=2048, init_from=str(source),
                         value_warmup_rollouts=10, eval_interval=0, checkpoint_interval=1024,
                         seed=2)
    summary = train(config, tmp_path)
    assert summary["timesteps"] == 2048
    before, after = load_policy(source), load_policy(tmp_path / "checkpoints" / "last.zip")
    actor_before, actor_after = _actor_state(before), _actor_state(after)
    assert actor_before and actor_before.keys() == actor_after.keys()
    for name, value in actor_before.items():
        assert torch.equal(value, actor_after[name]), name
    critic = [name for name in before.state_dict() if name.startswith("value_net")]
    assert critic and any(
        not torch.equal(before.state_dict()[n], after.state_dict()[n]) for n in critic
    )
    metadata = read_metadata(tmp_path / "checkpoints" / "last.zip")
    assert metadata["config"]["init_from"] == str(source)
    assert metadata["timesteps"] == 2048  # the step count starts fresh


@pytest.mark.slow  # trains its source network and runs
def test_init_from__then_ppo_trains_the_actor_too(source, tmp_path):
    config = TrainConfig(**SMALL, total_timesteps=2048, init_from=str(source),
                         value_warmup_rollouts=0, eval_interval=0, checkpoint_interval=1024,
                         seed=2)
    train(config, tmp_path)
    before, after = load_policy(source), load_policy(tmp_path / "checkpoints" / "last.zip")
    actor_before, actor_after = _actor_state(before), _actor_state(after)
    assert any(not torch.equal(value, actor_after[name]) for name, value in actor_before.items())


@pytest.mark.slow  # trains its source network and runs
def test_init_from__skips_the_imitation_teacher(source):
    # no warm start runs, so a teacher that cannot be built is no error
    config = TrainConfig(**SMALL, init_from=str(source), imitation_teacher="no-such-agent")
    prepare_start(config)
    with pytest.raises(TrainConfigError, match="imitation_teacher"):
        prepare_start(TrainConfig(**SMALL, imitation_teacher="no-such-agent"))


@pytest.mark.slow  # trains its source network and runs
@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"net_arch": [16, 32]}, "net_arch [32, 32] (the config asks for [16, 32]: it can only widen"),
        ({"net_arch": [32, 32, 32]}, "net_arch [32, 32] (the config asks for [32, 32, 32]"),
        ({"activation": "tanh"}, "activation 'relu' (the config asks for 'tanh')"),
        ({"features": "raw"}, "features 'grid' (the config asks for 'raw', which lacks"),
        ({"num_players": 3}, "was trained for other rules: num_players=2 (asked 3)"),
        ({"rules": "online"}, "was trained for other rules"),
    ],
)
def test_init_from__another_network_or_rules_is_named(source, changes, fragment):
    config = TrainConfig(**{**SMALL, **changes}, init_from=str(source))
    with pytest.raises(TrainConfigError) as caught:
        prepare_start(config)
    message = str(caught.value)
    assert message.startswith("config key 'init_from': ") and fragment in message, message


@pytest.mark.slow  # trains its source network and runs
def test_train_cli__init_from_mistakes_are_one_line_and_write_nothing(source, tmp_path, capsys):
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(b"not a zip")
    config = tmp_path / "small.yaml"
    config.write_text("net_arch: [16, 16]\n")
    cases = [
        (["--init-from", str(tmp_path / "missing.zip")], "does not exist"),
        (["--init-from", str(corrupt)], "corrupt.zip"),
        (["--init-from", str(source), "--config", str(config)], "net_arch [32, 32]"),
    ]
    for extra, fragment in cases:
        run_dir = tmp_path / "run"
        code = train_cli.main(["--run-dir", str(run_dir), "--no-progress", *extra])
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        assert code == 2 and len(lines) == 1, captured.err
        assert lines[0].startswith("error: config key 'init_from': ") and fragment in lines[0]
        assert not run_dir.exists()


def _assert_same_logits(policy, reference) -> None:
    """Both policies give the same masked logits over the decisions of a few `ev` games
    (up to float rounding: a wider layer sums in another order)."""
    from agents.ppo.inference import MaskedActor
    from agents.registry import make_agent
    from agents.training.imitation import collect_demonstrations
    from skyjo_env.core.rules import SkyjoRules

    rules = SkyjoRules()
    observations, masks, _ = collect_demonstrations(rules, [make_agent("ev", rules, seed=0)],
                                                    games=4, seed=0)
    obs, legal = torch.as_tensor(observations), torch.as_tensor(masks)
    with torch.no_grad():
        torch.testing.assert_close(MaskedActor(policy).masked_logits(obs, legal),
                                   MaskedActor(reference).masked_logits(obs, legal),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # trains its source network and runs
@pytest.mark.parametrize("features, added", [("grid_feeding", 12 + 2),
                                             ("grid_feeding_waits_risk", 12 + 2 + 12 + 1 + 10)])
def test_init_from__widens_a_grid_network_into_a_later_kind(source, tmp_path, features, added):
    # the new inputs start with zero weights: the frozen actor plays exactly as before
    config = TrainConfig(**{**SMALL, "features": features}, total_timesteps=1024,
                         init_from=str(source), value_warmup_rollouts=10, eval_interval=0,
                         checkpoint_interval=1024, seed=2)
    train(config, tmp_path)
    widened = load_policy(tmp_path / "checkpoints" / "last.zip")
    assert read_metadata(tmp_path / "checkpoints" / "last.zip")["policy"]["features"] == features
    before = load_policy(source)
    first = "mlp_extractor.policy_net.0.weight"
    old, new = before.state_dict()[first], widened.state_dict()[first]
    assert new.shape == (old.shape[0], old.shape[1] + added)
    assert torch.equal(new[:, :old.shape[1]], old) and not new[:, old.shape[1]:].any()
    _assert_same_logits(widened, before)


@pytest.mark.slow  # trains its source network and runs
def test_init_from__a_grid_feeding_network_cannot_start_a_grid_run(source, tmp_path):
    wide = tmp_path / "wide"
    train(TrainConfig(**{**SMALL, "features": "grid_feeding"}, total_timesteps=512,
                      imitation_games=0, eval_interval=0, checkpoint_interval=512), wide)
    config = TrainConfig(**SMALL, init_from=str(wide / "checkpoints" / "last.zip"))
    with pytest.raises(TrainConfigError, match="features 'grid_feeding' .*lacks some of its inputs"):
        prepare_start(config)


@pytest.mark.slow  # trains its source network and runs
def test_init_from__a_resumed_run_no_longer_needs_the_network(source, tmp_path):
    # --resume continues the checkpoint: the network the run started from may be gone
    start = tmp_path / "start.zip"
    start.write_bytes(source.read_bytes())
    run_dir = tmp_path / "run"
    base = dict(**SMALL, init_from=str(start), eval_interval=0, checkpoint_interval=512, seed=3)
    train(TrainConfig(**base, total_timesteps=1024), run_dir)
    start.unlink()
    code = train_cli.main(["--run-dir", str(run_dir), "--resume", "--total-timesteps", "2048",
                           "--no-progress"])
    assert code == 0
    assert read_metadata(run_dir / "checkpoints" / "last.zip")["timesteps"] == 2048
    # a new run with the same config is refused, naming the missing network
    with pytest.raises(TrainConfigError, match="config key 'init_from': .*does not exist"):
        train(TrainConfig(**base, total_timesteps=1024), tmp_path / "other")
    assert not (tmp_path / "other").exists()


@pytest.mark.slow  # trains its source network and runs
def test_init_from__grows_hidden_layers_and_plays_as_before(source, tmp_path):
    # net2net: the source's units keep their weights and ignore the added ones, and the
    # added units' weights into the layers above are zero; the frozen actor plays as before
    config = TrainConfig(**{**SMALL, "net_arch": [48, 64], "features": "grid_feeding"},
                         total_timesteps=1024, init_from=str(source), value_warmup_rollouts=10,
                         eval_interval=0, checkpoint_interval=1024, seed=2)
    train(config, tmp_path)
    grown = load_policy(tmp_path / "checkpoints" / "last.zip")
    assert read_metadata(tmp_path / "checkpoints" / "last.zip")["policy"]["net_arch"] == [48, 64]
    before = load_policy(source)
    old, new = before.state_dict(), grown.state_dict()
    hidden = "mlp_extractor.policy_net.2.weight"  # (64, 48) from (32, 32)
    assert new[hidden].shape == (64, 48)
    assert torch.equal(new[hidden][:32, :32], old[hidden]) and not new[hidden][:32, 32:].any()
    assert new[hidden][32:].abs().sum() > 0  # the added units are initialised, not dead
    assert not new["action_net.weight"][:, 32:].any()
    _assert_same_logits(grown, before)


def test_widened_state__keeps_the_outputs_of_a_network_grown_in_inputs_and_width():
    # the rule on its own, over plain layers: saved block at the top left, zero weights of
    # saved units from added inputs, fresh values for added units, the same outputs
    from agents.ppo.checkpoint import widened_state

    torch.manual_seed(0)
    small = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    large = torch.nn.Sequential(torch.nn.Linear(7, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    rename = {f"{i}.{kind}": f"mlp_extractor.policy_net.{i}.{kind}"
              for i in (0, 2) for kind in ("weight", "bias")}
    saved = {rename[k]: v for k, v in small.state_dict().items()}
    fresh = {rename[k]: v.clone() for k, v in large.state_dict().items()}
    state = widened_state(saved, fresh)
    large.load_state_dict({k: state[rename[k]] for k in rename})
    first = state["mlp_extractor.policy_net.0.weight"]
    assert torch.equal(first[3:], fresh["mlp_extractor.policy_net.0.weight"][3:])
    assert not first[:3, 5:].any()
    inputs = torch.randn(64, 7)
    torch.testing.assert_close(large(inputs), small(inputs[:, :5]))
    assert torch.equal(saved["mlp_extractor.policy_net.0.weight"], small[0].weight)  # untouched

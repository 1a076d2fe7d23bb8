"""Expert iteration: recorded returns, value targets, and the training step itself."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from agents.registry import make_agent
from agents.search import ActionValues
from agents.training.config import TrainConfig, TrainConfigError
from agents.training.expert import (
    agreement,
    collect_expert_games,
    critic_targets,
    research_positions,
    soft_search_targets,
    teacher_spec,
    value_targets,
)
from agents.training.imitation import (
    ChunksStopped,
    _discounted_returns,
    collect_demonstrations,
    record_games,
    run_chunks,
)
from agents.training.start import prepare_start
from skyjo_env.core import layout
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout
from skyjo_env.rewards import grid_potential

RULES = SkyjoRules()
#: Tiny search: cheap enough for unit tests, still a real search over the base.
#: Tiny searches over a network; unnamed options would keep `PPO_SEARCH`'s (agents.registry).
TINY_SEARCH = ("search(samples=2,depth=2,leaf=margin,top_actions=all,confidence_z=2,"
               "verify_samples=0)")
TINY_CRITIC = "samples=2,depth=2,leaf=critic,top_actions=all,confidence_z=2,verify_samples=0"


def test_record_games__first_return_is_the_whole_game_reward():
    games = 12
    ev = make_agent("ev", RULES, seed=0)
    played = record_games(RULES, [ev], games, seed=4, batch=games)
    # replay the same deals to read the final totals
    from skyjo_env.core import legal_action_mask, new_batch, reset, step
    from skyjo_env.encoding import ObservationEncoder

    state = new_batch(RULES, games)
    reset(state, np.random.default_rng(4))
    encoder = ObservationEncoder(RULES)
    replay_ev = make_agent("ev", RULES, seed=0)
    seats_first = state.current_player.copy()
    while not state.all_over:
        running = ~state.game_over
        actions = np.full(games, -1, np.int64)
        observations = encoder.encode(state, state.current_player)
        actions[running] = replay_ev.act(observations[running], legal_action_mask(state)[running])
        step(state, actions)
    totals = state.seat[:, :, layout.TOTAL].astype(np.float64)
    assert not state.truncated.any()
    # independent of `seat_rewards_into`: round margins sum to the totals' margin, and the
    # lowest total wins +1 (ties share), the others share -1
    margin = -(totals - (totals.sum(axis=1, keepdims=True) - totals)) / 100.0
    best = totals.min(axis=1, keepdims=True)
    winners = totals == best
    k = winners.sum(axis=1, keepdims=True)
    placement = np.where(winners, 1.0 / k, -1.0 / (2 - k).clip(min=1))
    placement[(k == 2).ravel()] = 0.0
    expected = margin + placement
    # the first decision of every game is by its starting seat, before any reward
    np.testing.assert_allclose(played.returns[:games], expected[np.arange(games), seats_first])
    assert np.abs(played.returns[:games]).max() > 0.5  # the placement reward is in there


def test_discounted_returns__known_answer():
    # one game, seats 0 and 1 alternating; seat 0 earns 1 after its first decision and
    # 2 at the end, seat 1 earns 0 then 4 at the end
    game_of = np.array([0, 0, 0, 0])
    seat_of = np.array([0, 1, 0, 1])
    earned_before = np.array([0.0, 0.0, 1.0, 0.0])
    earned_at_end = np.array([3.0, 4.0, 3.0, 4.0])
    returns = _discounted_returns(game_of, seat_of, earned_before, earned_at_end, gamma=0.5)
    np.testing.assert_allclose(returns, [1.0 + 0.5 * 2.0, 0.0 + 0.5 * 4.0, 2.0, 4.0])
    undiscounted = _discounted_returns(game_of, seat_of, earned_before, earned_at_end, 1.0)
    np.testing.assert_allclose(undiscounted, [3.0, 4.0, 2.0, 4.0])


def test_record_games__same_moves_as_collect_demonstrations():
    teacher = make_agent("greedy", RULES, seed=0)
    observations, masks, actions = collect_demonstrations(RULES, [teacher], games=3, seed=9)
    played = record_games(RULES, [make_agent("greedy", RULES, seed=0)], 3, seed=9)
    np.testing.assert_array_equal(played.observations, observations)
    np.testing.assert_array_equal(played.actions, actions)
    np.testing.assert_array_equal(played.masks, masks)


def test_value_targets__subtract_the_shaping_potential():
    played = record_games(RULES, [make_agent("ev", RULES, seed=0)], 2, seed=1)
    obs_layout = ObservationLayout(RULES)
    np.testing.assert_array_equal(value_targets(played, obs_layout, 0.0), played.returns)
    shaped = value_targets(played, obs_layout, 0.5)
    np.testing.assert_allclose(
        shaped, played.returns - 0.5 * grid_potential(played.observations, obs_layout)
    )
    assert not np.allclose(shaped, played.returns)


def test_critic_targets__mix_outcomes_and_the_searched_moves_values():
    played = record_games(RULES, [make_agent("ev", RULES, seed=0)], 1, seed=1)
    obs_layout = ObservationLayout(RULES)
    rows = len(played.actions)
    means = np.full(played.masks.shape, np.nan, np.float32)
    means[np.arange(rows), played.actions] = np.arange(rows, dtype=np.float32)
    base = np.where(np.arange(rows) % 3 == 0, -1, played.actions)  # every third: not searched
    values = ActionValues(means, np.zeros_like(means), base)
    outcome = played.returns
    estimate = np.arange(rows, dtype=np.float64)
    searched = base >= 0
    np.testing.assert_array_equal(critic_targets(played, None, obs_layout, 0.0, 1.0), outcome)
    np.testing.assert_allclose(critic_targets(played, values, obs_layout, 0.0, 0.0),
                               np.where(searched, estimate, outcome))
    np.testing.assert_allclose(critic_targets(played, values, obs_layout, 0.0, 0.25),
                               np.where(searched, 0.25 * outcome + 0.75 * estimate, outcome))
    potential = grid_potential(played.observations, obs_layout)
    np.testing.assert_allclose(critic_targets(played, values, obs_layout, 0.5, 0.25),
                               np.where(searched, 0.25 * outcome + 0.75 * estimate, outcome)
                               - 0.5 * potential)
    with pytest.raises(ValueError, match="needs the search's action values"):
        critic_targets(played, None, obs_layout, 0.0, 0.5)
    with pytest.raises(ValueError, match=r"value mix must be in \[0, 1\], got 1.5"):
        critic_targets(played, values, obs_layout, 0.0, 1.5)


def test_soft_search_targets__known_answers():
    nan = np.nan
    prior = np.array([[0.5, 0.25, 0.25, 0.0], [0.25, 0.25, 0.25, 0.25]])
    masks = np.array([[True, True, True, False], [True, True, True, True]])
    # row 0: action 1 is 3 points better than the base (0), action 2 was not tried;
    # row 1: base 3, action 0 one point worse, actions 1 and 2 not tried
    means = np.array([[0.10, 0.13, nan, nan], [0.19, nan, nan, 0.20]])
    errors = np.array([[0.0, 0.03, nan, nan], [0.01, nan, nan, 0.0]])
    base = np.array([0, 3])
    targets = soft_search_targets(prior, means, errors, base, masks, temperature=0.03)
    e = np.exp(1.0)
    # untried actions get the lowest tried advantage: 0 in row 0, -0.01 in row 1
    np.testing.assert_allclose(targets[0], np.array([0.5, 0.25 * e, 0.25, 0]) / (0.75 + 0.25 * e))
    low = np.exp(-1 / 3)
    np.testing.assert_allclose(targets[1], np.array([low, low, low, 1]) / (3 * low + 1))
    # shrinking: an advantage of 0.03 with error 0.03 counts half
    shrunk = soft_search_targets(prior, means, errors, base, masks, 0.03, shrink=True)
    half = np.exp(0.5)
    np.testing.assert_allclose(shrunk[0], np.array([0.5, 0.25 * half, 0.25, 0])
                               / (0.75 + 0.25 * half))
    with pytest.raises(ValueError, match="temperature must be"):
        soft_search_targets(prior, means, errors, base, masks, temperature=0.0)


@pytest.mark.slow  # search games
def test_collect_expert_games__search_games_are_seeded_and_legal():
    spec = f"{TINY_SEARCH}:greedy"
    first = collect_expert_games(RULES, spec, games=3, seed=2, teacher_seed=5).played
    again = collect_expert_games(RULES, spec, games=3, seed=2, teacher_seed=5).played
    np.testing.assert_array_equal(first.actions, again.actions)
    assert first.masks[np.arange(len(first.actions)), first.actions].all()
    # the search does not always play greedy's move: it is a different player
    greedy = make_agent("greedy", RULES, seed=0)
    assert agreement(greedy.act(first.observations, first.masks), first.actions) < 1.0


@pytest.mark.slow  # search games
def test_collect_expert_games__records_the_search_values_of_each_decision():
    # z = 0, no retest: every searched move is the best mean of the recorded values
    spec = "search(samples=3,depth=2,confidence_z=0):greedy"
    played, values = collect_expert_games(RULES, spec, games=3, seed=2, teacher_seed=5,
                                          chunk_games=2)
    rows = np.arange(len(played.actions))
    assert values.means.shape == values.errors.shape == played.masks.shape
    assert values.means.dtype == np.float32 and values.base_actions.dtype == np.int64
    searcher = make_agent(spec, RULES, seed=0)
    searched = searcher.searchable_rows(played.observations, played.masks)
    assert 0 < searched.sum() < len(rows)
    np.testing.assert_array_equal(values.base_actions >= 0, searched)
    assert np.isnan(values.means[~searched]).all()
    best = np.nanmax(values.means[searched], axis=1)
    chosen = values.means[rows[searched], played.actions[searched]]
    np.testing.assert_allclose(chosen, best, rtol=0, atol=1e-6)
    greedy = make_agent("greedy", RULES, seed=0)
    np.testing.assert_array_equal(values.base_actions[searched],
                                  greedy.act(played.observations, played.masks)[searched])


@pytest.mark.slow  # search games
def test_research_positions__searched_rows_take_the_new_search_the_rest_stay():
    games = collect_expert_games(RULES, "search(samples=3,depth=2,confidence_z=0):greedy",
                                 games=2, seed=2, teacher_seed=5)
    spec = "search(samples=3,depth=2,confidence_z=0):ev"
    again = research_positions(RULES, spec, games, seed=9, chunk_rows=40)  # several chunks
    searched = games.values.base_actions >= 0
    assert searched.sum() > 2 * 40
    for name in ("observations", "masks", "returns"):
        np.testing.assert_array_equal(getattr(again.played, name), getattr(games.played, name))
    np.testing.assert_array_equal(again.played.actions[~searched], games.played.actions[~searched])
    assert np.isnan(again.values.means[~searched]).all()
    np.testing.assert_array_equal(again.values.base_actions >= 0, searched)
    # the new search's base is ev, and with z = 0 it plays the best of its own means
    observations, masks = games.played.observations[searched], games.played.masks[searched]
    ev = make_agent("ev", RULES, seed=0)
    np.testing.assert_array_equal(again.values.base_actions[searched], ev.act(observations, masks))
    rows = np.flatnonzero(searched)
    best = np.nanmax(again.values.means[rows], axis=1)
    np.testing.assert_allclose(again.values.means[rows, again.played.actions[rows]], best,
                               rtol=0, atol=1e-6)
    same = research_positions(RULES, spec, games, seed=9, chunk_rows=40)
    np.testing.assert_array_equal(same.played.actions, again.played.actions)


def test_run_chunks__should_stop_abandons_between_chunks():
    calls = []

    def task(chunk, size):
        calls.append(chunk)
        return chunk

    with pytest.raises(ChunksStopped):
        run_chunks(task, [1, 1, 1], should_stop=lambda: len(calls) >= 2)
    assert calls == [0, 1]
    assert run_chunks(task, [1, 1], should_stop=lambda: False) == [0, 1]


def test_teacher_spec__builds_a_search_over_the_saved_policy():
    assert teacher_spec("search(samples=4)", "runs/x/expert/policy.zip") == (
        "search(samples=4):ppo:runs/x/expert/policy.zip"
    )


@pytest.mark.parametrize("value", ["ev", "search:ev", "search(samples=2", "samples=2"])
def test_train_config__expert_search_must_be_a_search_without_base(value):
    with pytest.raises(TrainConfigError, match="config key 'expert_search'"):
        TrainConfig(expert_search=value)


def test_prepare_start__bad_expert_search_option_names_the_key():
    config = TrainConfig(expert_interval=1000, expert_search="search(sample=2)",
                         imitation_games=0, eval_opponents=["random"])
    with pytest.raises(TrainConfigError, match="config key 'expert_search'.*sample"):
        prepare_start(config)
    config.expert_interval = 0  # unused options are not checked
    prepare_start(config)
    # a critic leaf needs a ppo base: the policy being trained is one
    config.expert_interval, config.expert_search = 1000, "search(leaf=critic,top_actions=4)"
    prepare_start(config)


def _tiny_config(**overrides) -> TrainConfig:
    values = dict(
        total_timesteps=2048, n_envs=16, n_steps=32, batch_size=512, imitation_games=16,
        eval_interval=0, eval_games=8, eval_opponents=["greedy"], checkpoint_interval=1024,
        expert_interval=1024, expert_games=6, expert_epochs=10, expert_search=TINY_SEARCH,
        expert_learning_rate=3e-3, expert_value_fit=True,
        progress=False,
    )
    values.update(overrides)
    return TrainConfig(**values)


def _actor_weights(model) -> list[np.ndarray]:
    from agents.training.imitation import actor_parameters, critic_parameters

    return [p.detach().numpy().copy()
            for p in [*actor_parameters(model.policy), *critic_parameters(model.policy)]]


@pytest.mark.slow  # search games and network fitting
def test_trainer_expert_iteration__fits_the_policy_to_the_search(tmp_path):
    from agents.training.trainer import Trainer

    # confidence_z=0: the search plays its best mean, often not the policy's own move
    config = _tiny_config(expert_search="search(samples=2,depth=2,confidence_z=0,leaf=margin,"
                                        "top_actions=all,verify_samples=0)")
    trainer = Trainer(prepare_start(config), tmp_path / "run")
    trainer.build_env()
    trainer.model = trainer.build_model()
    trainer.warm_start()  # an untrained policy plays endless games: searching them is slow
    before = _actor_weights(trainer.model)
    stats = trainer.expert_iteration(1024)
    assert stats is not None and stats["decisions"] > 100
    assert 0.0 <= stats["agreement_before"] <= 1.0 and np.isfinite(stats["value_loss"])
    # fitted to the searched moves: it agrees with them more than the untrained policy did
    # measured: 55% before, 76% after
    assert stats["agreement_after"] > stats["agreement_before"] + 0.1, stats
    after = _actor_weights(trainer.model)
    assert all(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    assert trainer.next_expert == 2048
    assert (tmp_path / "run" / "expert" / "policy.zip").is_file()


@pytest.mark.slow  # search games and network fitting
def test_trainer_expert_iteration__soft_targets_fit_the_searched_decisions(tmp_path):
    from agents.training.trainer import Trainer

    config = _tiny_config(expert_soft_temperature=0.03, expert_value_fit=False,
                          expert_games=3)
    trainer = Trainer(prepare_start(config), tmp_path / "run")
    trainer.build_env()
    trainer.model = trainer.build_model()
    trainer.warm_start()
    before = _actor_weights(trainer.model)
    stats = trainer.expert_iteration(1024)
    assert stats is not None and 0 < stats["fitted"] < stats["decisions"]
    assert "value_loss" not in stats and np.isfinite(stats["loss"])
    after = _actor_weights(trainer.model)
    assert any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))


@pytest.mark.slow  # search games
def test_trainer_expert_iteration__log_lines_count_the_search_games(tmp_path, capsys):
    from agents.training.expert import EXPERT_CHUNK_GAMES
    from agents.training.trainer import Trainer

    games = EXPERT_CHUNK_GAMES + 2  # two chunks: a line as each ends
    config = _tiny_config(expert_games=games, expert_value_fit=False, expert_epochs=1)
    trainer = Trainer(prepare_start(config), tmp_path / "run", log_lines=True)
    trainer.build_env()
    trainer.model = trainer.build_model()
    trainer.warm_start()
    assert trainer.expert_iteration(1024) is not None
    lines = [line for line in capsys.readouterr().out.splitlines() if "expert games" in line]
    counts = [line.split("expert games ")[1].split(" in ")[0] for line in lines]
    # data_workers 0: the chunks end in order, so the running count is known
    assert counts == [f"{EXPERT_CHUNK_GAMES}/{games}", f"{games}/{games}"], lines
    assert all(line.startswith("[     1,024 steps]") for line in lines), lines


def test_trainer_expert_iteration__stop_request_leaves_the_network_alone(tmp_path):
    from agents.training.trainer import Trainer

    trainer = Trainer(prepare_start(_tiny_config()), tmp_path / "run")
    trainer.build_env()
    trainer.model = trainer.build_model()
    before = _actor_weights(trainer.model)
    trainer.stop_requested = True
    assert trainer.expert_iteration(1024) is None
    for a, b in zip(before, _actor_weights(trainer.model), strict=True):
        np.testing.assert_array_equal(a, b)
    assert trainer.next_expert == 1024  # still due: a resume does it


@pytest.mark.slow  # search games and network fitting
def test_train__expert_iteration_logs_to_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from agents.training.trainer import train

    run = tmp_path / "run"
    summary = train(_tiny_config(), run)
    assert summary["timesteps"] >= 2048
    events = EventAccumulator(str(next((run / "tb").iterdir())))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for key in ("agreement_before", "agreement_after", "loss", "value_loss", "decisions", "fitted",
                "seconds"):
        assert f"expert/{key}" in tags, sorted(tags)
    assert len(events.Scalars("expert/agreement_after")) == 1  # at 1,024 steps; not at the end


@pytest.mark.slow  # search games and network fitting
def test_distill_checkpoint__writes_a_loadable_fitted_network(tmp_path):
    import torch

    from agents.ppo.checkpoint import load_policy, read_metadata
    from agents.training.expert import distill_checkpoint

    shipped = Path(__file__).resolve().parents[2] / "models" / "ppo_2p.zip"
    first = tmp_path / "step1.zip"
    stats = distill_checkpoint(shipped, first, "search(samples=2,depth=2,leaf=critic)", games=1,
                               seed=3, learning_rate=1e-3)
    assert stats["decisions"] > 30 and "value_loss" not in stats
    before, after = load_policy(shipped).state_dict(), load_policy(first).state_dict()
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    assert any(name.startswith("action_net") for name in changed)
    assert not any(name.startswith("value_net") for name in changed)  # value_fit is opt-in
    fitted = tmp_path / "with_value.zip"
    stats = distill_checkpoint(shipped, fitted, "search(samples=2,depth=2)", games=1, seed=3,
                               value_fit=True)
    assert np.isfinite(stats["value_loss"])
    after = load_policy(fitted).state_dict()
    assert not torch.equal(before["value_net.weight"], after["value_net.weight"])
    # a further step reads the new checkpoint, critic leaf included; provenance accumulates
    second = tmp_path / "step2.zip"
    distill_checkpoint(first, second, "search(samples=2,depth=2,leaf=critic)", games=1, seed=4)
    history = read_metadata(second)["distilled"]
    assert [step["source"] for step in history] == [str(shipped), str(first)]


def _tiny_games(rows: int = 3, width: int = 5, actions: int = 4):
    from agents.training.imitation import RecordedGames

    masks = np.zeros((rows, actions), bool)
    masks[:, 1] = True
    return RecordedGames(np.ones((rows, width), np.float32), masks,
                         np.ones(rows, np.int64), np.zeros(rows))


def _tiny_values(rows: int = 3, actions: int = 4):
    from agents.search import ActionValues

    means = np.full((rows, actions), np.nan, np.float32)
    means[1:, 1] = 0.5
    errors = np.where(np.isfinite(means), 0.0, np.nan).astype(np.float32)
    return ActionValues(means, errors, np.array([-1] + [1] * (rows - 1), np.int64))


def test_recorded_games__round_trip_with_their_provenance(tmp_path):
    from agents.training.expert import load_recorded_games, save_recorded_games

    played = _tiny_games()
    save_recorded_games(played, tmp_path / "g.npz", {"search": "search", "games": 2})
    loaded, info, values = load_recorded_games(tmp_path / "g.npz", 5, 4)
    for name in played._fields:
        np.testing.assert_array_equal(getattr(loaded, name), getattr(played, name))
        assert getattr(loaded, name).dtype == getattr(played, name).dtype
    assert info["search"] == "search" and info["games"] == 2
    assert values is None  # saved without the search's values
    save_recorded_games(played, tmp_path / "v.npz", {}, _tiny_values())
    values = load_recorded_games(tmp_path / "v.npz", 5, 4)[2]
    for name, array in _tiny_values()._asdict().items():
        np.testing.assert_array_equal(getattr(values, name), array)
        assert getattr(values, name).dtype == array.dtype


@pytest.mark.parametrize(
    "change, words",
    [
        ({"base_actions": np.array([-1, 2, 1])}, "a search base action that is not a legal"),
        ({"base_actions": np.array([-1, 1, 4])}, "a search base action that is not a legal"),
        ({"means": np.full((3, 4), np.nan, np.float32)}, "not a legal, valued action"),
        ({"errors": np.zeros((3, 3), np.float32)}, "search value errors are float32 (3, 3)"),
        ({"base_actions": np.ones(3, np.int32)}, "search base actions are int32 (3,)"),
    ],
)
def test_load_recorded_games__search_values_that_do_not_fit_are_named(tmp_path, change, words):
    from agents.training.expert import GamesFileError, load_recorded_games, save_recorded_games

    path = tmp_path / "g.npz"
    save_recorded_games(_tiny_games(), path, {}, _tiny_values())
    with np.load(path) as data:
        arrays = dict(data)
    names = {"means": "value_means", "errors": "value_errors", "base_actions": "value_base"}
    arrays.update({names[name]: value for name, value in change.items()})
    np.savez(path, **arrays)
    with pytest.raises(GamesFileError, match=re.escape(words)):
        load_recorded_games(path, 5, 4)


@pytest.mark.parametrize(
    "change, width, words",
    [
        ({}, 6, "observations is float32 (3, 5), the network needs float32 (3, 6)"),
        ({"actions": np.array([1, 2, 1])}, 5, "an action outside its legal mask"),
        ({"returns": np.array([0.0, np.nan, 0.0])}, 5, "returns that are not finite"),
        ({"actions": np.ones(3, np.int32)}, 5, "actions is int32 (3,)"),
    ],
)
def test_load_recorded_games__names_what_does_not_fit(tmp_path, change, width, words):
    from agents.training.expert import GamesFileError, load_recorded_games, save_recorded_games

    save_recorded_games(_tiny_games()._replace(**change), tmp_path / "g.npz", {})
    with pytest.raises(GamesFileError, match=re.escape(words)):
        load_recorded_games(tmp_path / "g.npz", width, 4)


def test_load_recorded_games__another_npz_is_refused(tmp_path):
    from agents.training.expert import GamesFileError, load_recorded_games

    np.savez(tmp_path / "other.npz", observations=np.zeros((1, 5), np.float32))
    with pytest.raises(GamesFileError, match="not a readable skyjo-distill games file"):
        load_recorded_games(tmp_path / "other.npz", 5, 4)


@pytest.mark.slow  # search games and network fitting
def test_distill_checkpoint__soft_targets_move_the_policy_towards_them(tmp_path):
    import torch

    from agents.ppo.checkpoint import load_policy, read_metadata
    from agents.training.expert import distill_checkpoint, load_recorded_games, policy_soft_targets
    from agents.training.imitation import action_probabilities

    shipped = Path(__file__).resolve().parents[2] / "models" / "ppo_2p.zip"
    out, games = tmp_path / "soft.zip", tmp_path / "soft.games.npz"
    stats = distill_checkpoint(shipped, out, "search(samples=4,depth=2,leaf=critic)", games=1,
                               seed=3, learning_rate=1e-3, epochs=4, games_out=games,
                               soft_temperature=0.03)
    assert 0 < stats["fitted"] < stats["decisions"]  # setup reveals and forced moves are not
    step = read_metadata(out)["distilled"][-1]
    assert step["soft_temperature"] == 0.03 and step["anchor"] is None
    source = load_policy(shipped)
    played, _, values = load_recorded_games(games, source.observation_space.shape[0],
                                            source.action_space.n)
    rows = np.flatnonzero(values.base_actions >= 0)
    targets, _ = policy_soft_targets(source, played.observations[rows], played.masks[rows],
                                     ActionValues(*(part[rows] for part in values)), 0.03)

    def cross_entropy(network) -> float:
        probabilities = action_probabilities(
            load_policy(network), torch.as_tensor(played.observations[rows]),
            torch.as_tensor(played.masks[rows])).double().numpy()
        return float(-np.mean(np.sum(targets * np.log(np.maximum(probabilities, 1e-12)), 1)))

    # measured: 0.182 before the fit, 0.130 after
    assert cross_entropy(out) < cross_entropy(shipped) - 0.02


def test_distill_checkpoint__bad_soft_temperature_is_refused_before_searching(tmp_path):
    from agents.training.expert import distill_checkpoint

    shipped = Path(__file__).resolve().parents[2] / "models" / "ppo_2p.zip"
    with pytest.raises(ValueError, match="soft_temperature must be a finite number > 0"):
        # 10**6 games would take days: refused at once
        distill_checkpoint(shipped, tmp_path / "o.zip", TINY_SEARCH, games=10**6, seed=0,
                           soft_temperature=float("nan"))
    assert not (tmp_path / "o.zip").exists()


@pytest.mark.slow  # subprocess benchmark runs
def test_soft_distill_benchmark__labels_fits_and_compares(tmp_path):
    import subprocess
    import sys

    from agents.training.expert import save_recorded_games
    from agents.training.imitation import record_games

    games = tmp_path / "few.games.npz"
    save_recorded_games(record_games(RULES, [make_agent("ev", RULES, seed=0)], 2, seed=1),
                        games, {"search": "none: ev self-play"})
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, str(root / "experiments" / "soft_distill.py"), "--games",
               str(games), "--search", TINY_SEARCH, "--parts", "1", "--fit", "0.03", "1", "1",
               "1e-4", "--eval-games", "4", "--out-dir", str(tmp_path / "fits")]
    first = subprocess.run(command, capture_output=True, text=True, cwd=root, timeout=300)
    assert first.returncode == 0, first.stderr
    assert re.search(r"^t0\.03_shrink_e1_lr0\.0001 .*%", first.stdout, re.MULTILINE), first.stdout
    fitted = make_agent(f"ppo:{tmp_path / 'fits' / 't0.03_shrink_e1_lr0.0001.zip'}", RULES, 0)
    with np.load(games) as data:
        observations, masks = data["observations"], data["masks"]
    assert masks[np.arange(len(masks)), fitted.act(observations, masks)].all()
    again = subprocess.run([*command, "--capacity-check", "20"], capture_output=True,
                           text=True, cwd=root, timeout=300)
    assert "labels: read" in again.stdout  # the saved labels are reused
    assert re.search(r"capacity check: on 20 decisions .* plays it in \d+\.\d%", again.stdout)


@pytest.mark.slow  # subprocess benchmark runs
def test_soft_distill_benchmark__pools_the_values_recorded_with_the_games(tmp_path):
    import subprocess
    import sys

    from agents.training.expert import save_recorded_games

    root = Path(__file__).resolve().parents[2]
    shipped = root / "models" / "ppo_2p.zip"
    played, values = collect_expert_games(
        RULES, f"search({TINY_CRITIC}):ppo:{shipped}", games=1, seed=1,
        teacher_seed=2)
    games = tmp_path / "searched.games.npz"
    save_recorded_games(played, games, {"search": f"search({TINY_CRITIC})"},
                        values)
    command = [sys.executable, str(root / "experiments" / "soft_distill.py"), "--games",
               str(games), str(games), "--fit", "0.03", "0", "1", "1e-4", "--eval-games", "2",
               "--out-dir", str(tmp_path / "fits")]
    done = subprocess.run(command, capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr
    searched = int((values.base_actions >= 0).sum())
    recorded = f"labels: the search values recorded in {games} ({searched:,} decisions)"
    assert done.stdout.count(recorded) == 2, done.stdout  # two files (here the same) pooled
    assert f"; {2 * searched:,} labelled decisions" in done.stdout
    assert re.search(r"^t0\.03_raw_e1_lr0\.0001 .*%", done.stdout, re.MULTILINE), done.stdout
    assert not (tmp_path / "searched.games.labels.npz").exists()  # nothing labelled again


@pytest.mark.slow  # subprocess benchmark runs
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--games", "no_such.games.npz"], "games file 'no_such.games.npz' is not a file"),
        (["--games", "models/ppo_2p.zip", "--fit", "x", "0", "2", "1e-4"],
         "could not convert string to float: 'x'"),
    ],
)
def test_soft_distill_benchmark__bad_input_is_one_line_exit_2(extra, message):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(root / "experiments" / "soft_distill.py"), *extra],
                          capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr

"""Tournaments: legality, seat rotation over duplicated deals, statistics, determinism."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from agents.baselines.heuristics import EVAgent, GreedyAgent
from agents.evaluation.games import (
    MAX_RECORDS_BYTES,
    AgentActionError,
    GameRecords,
    ProgressLines,
    TooManyGamesError,
    agent_seed,
    deal_seeds,
    display_names,
    max_games,
    play_games,
    progress_bar,
    record_bytes_per_game,
)
from agents.evaluation.report import format_table, games_per_second_text, render_json
from agents.evaluation.statistics import (
    mean_confidence_interval,
    t_quantile_975,
    wilson_interval,
    win_rate_interval,
)
from agents.evaluation.tournament import TRUNCATED_POLICY, evaluate_agents, play_tournament
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import RandomAgent


class CheckingRandomAgent(RandomAgent):
    """A random agent that also checks what the tournament hands it."""

    def __init__(self, rules: SkyjoRules, seed: int, name: str = "random"):
        super().__init__(seed, name=name)
        layout = ObservationEncoder(rules).layout
        self.current_seat = layout.describe()["current_seat"]
        self.size = layout.size
        self.rows_seen = 0

    def act(self, observations, action_masks):
        assert observations.dtype == np.float32 and observations.shape[1] == self.size
        assert action_masks.dtype == np.bool_ and action_masks.any(axis=1).all()
        # every observation is from the acting seat: relative seat 0 is the one to act
        assert (observations[:, self.current_seat].argmax(axis=1) == 0).all()
        self.rows_seen += observations.shape[0]
        actions = super().act(observations, action_masks)
        assert action_masks[np.arange(len(actions)), actions].all()
        return actions


class HashAgent:
    """Deterministic: a legal action picked by a hash of the observation (same obs, same act)."""

    def __init__(self, name: str = "hash"):
        self.name = name

    def act(self, observations, action_masks):
        out = np.empty(len(observations), np.int64)
        for row, (observation, mask) in enumerate(zip(observations, action_masks, strict=True)):
            legal = np.flatnonzero(mask)
            out[row] = legal[zlib.crc32(observation.tobytes()) % legal.size]
        return out


class IllegalAgent:
    name = "cheater"

    def act(self, observations, action_masks):
        return (~action_masks).argmax(axis=1).astype(np.int64)  # first illegal action


class WrongShapeAgent:
    name = "sloppy"

    def act(self, observations, action_masks):
        return np.zeros(len(observations) + 1, np.int64)


class RaisingAgent:
    name = "fragile"

    def act(self, observations, action_masks):
        raise RuntimeError("kaboom")


class OneArgumentAgent:
    name = "forgetful"

    def act(self, observations):
        return np.zeros(len(observations), np.int64)


def _result_data(result) -> dict:
    data = result.to_dict()
    data.pop("elapsed_s")
    data.pop("games_per_second")
    return data


@pytest.mark.parametrize("players, games", [(2, 400), (4, 400), (8, 240), (12, 120)])
def test_play_tournament__random_agents_play_only_legal_actions(players, games):
    rules = SkyjoRules(num_players=players)
    agents = [CheckingRandomAgent(rules, agent_seed(1, i)) for i in range(players)]
    result = play_tournament(agents, rules, games, seed=1, progress=False)
    records = result.records
    assert result.games == games and records.num_games == games
    assert all(agent.rows_seen > 0 for agent in agents)
    assert np.allclose(records.win_share.sum(axis=1), 1.0)
    assert (records.rounds >= 1).all()
    # a game ends once some total reaches the target (no truncation with random play)
    assert not records.truncated.any()
    assert (records.total.max(axis=1) >= rules.target_score).all()
    # the lowest total wins
    winners = records.total == records.total.min(axis=1, keepdims=True)
    assert np.array_equal(records.win_share > 0, winners)
    assert [stats.name for stats in result.agents] == [f"random#{i + 1}" for i in range(players)]
    assert sum(stats.wins for stats in result.agents) == pytest.approx(games)


def test_play_tournament__win_shares_split_ties():
    rules = SkyjoRules(num_players=4)
    agents = [RandomAgent(agent_seed(1, i)) for i in range(4)]
    records = play_tournament(agents, rules, 400, seed=1, progress=False).records
    winners = records.total == records.total.min(axis=1, keepdims=True)
    count = winners.sum(axis=1, keepdims=True)
    assert (count > 1).any(), "expected some shared wins in 400 four-player games"
    assert np.allclose(records.win_share, winners / count)


def test_play_tournament__same_seed_same_report():
    rules = SkyjoRules(num_players=3)

    def run(seed):
        agents = [RandomAgent(agent_seed(seed, i)) for i in range(3)]
        return _result_data(play_tournament(agents, rules, 150, seed, progress=False))

    first, second, other = run(4), run(4), run(5)
    assert first == second
    assert first != other


def test_evaluate_agents__same_seed_same_report():
    rules = SkyjoRules()
    first = evaluate_agents(["random", "greedy"], rules, 60, 9, progress=False)
    second = evaluate_agents(["random", "greedy"], rules, 60, 9, progress=False)
    assert _result_data(first) == _result_data(second)
    assert np.array_equal(first.records.total, second.records.total)


def test_play_tournament__rotations_replay_the_same_deal_mirrored():
    # two identical deterministic agents: rotation 1 of a deal is rotation 0 with the
    # agents swapped, so every per-agent outcome is mirrored
    rules = SkyjoRules()
    records, _ = play_games([HashAgent(), HashAgent()], rules, 200, seed=3)
    first, second = slice(0, None, 2), slice(1, None, 2)
    assert np.array_equal(records.deal[first], records.deal[second])
    assert (records.rotation[first] == 0).all() and (records.rotation[second] == 1).all()
    assert np.array_equal(records.seat[first], [[0, 1]] * 100)
    assert np.array_equal(records.seat[second], [[1, 0]] * 100)
    for field in ("total", "win_share", "rounds_finished", "times_penalised", "lines_eliminated"):
        values = getattr(records, field)
        assert np.array_equal(values[first], values[second][:, ::-1]), field
    assert np.array_equal(records.rounds[first], records.rounds[second])
    # and the deals differ from one group to the next
    assert len(np.unique(records.total[first], axis=0)) > 50


def test_play_tournament__three_seat_rotations_share_the_deal():
    rules = SkyjoRules(num_players=3)
    records, _ = play_games([HashAgent(), HashAgent(), HashAgent()], rules, 60, seed=8)
    assert records.num_games == 60
    # totals by seat are the same in the three rotations of one deal
    by_seat = np.empty_like(records.total)
    np.put_along_axis(by_seat, records.seat, records.total, axis=1)
    grouped = by_seat.reshape(20, 3, 3)
    assert (grouped == grouped[:, :1]).all()


def test_play_tournament__games_rounded_up_to_whole_deal_groups():
    rules = SkyjoRules(num_players=3)
    agents = [RandomAgent(i) for i in range(3)]
    result = play_tournament(agents, rules, 7, seed=0, progress=False)
    assert result.games == 9 and result.requested_games == 7 and result.deals == 3
    assert result.to_dict()["games"] == 9


def test_play_games__refilled_slots_match_one_big_batch():
    rules = SkyjoRules(num_players=2)
    big, _ = play_games([HashAgent(), HashAgent()], rules, 64, seed=2, max_batch=64)
    small, _ = play_games([HashAgent(), HashAgent()], rules, 64, seed=2, max_batch=5)
    for field in ("total", "win_share", "rounds", "lines_eliminated", "decisions"):
        assert np.array_equal(getattr(big, field), getattr(small, field)), field


def test_deal_seeds__reproducible_and_prefix_stable():
    assert deal_seeds(5, 3) == deal_seeds(5, 10)[:3]
    assert deal_seeds(5, 3) != deal_seeds(6, 3)
    assert agent_seed(5, 0) != agent_seed(5, 1)
    assert agent_seed(5, 0) not in deal_seeds(5, 100)


def test_play_tournament__illegal_action_names_the_agent():
    rules = SkyjoRules()
    with pytest.raises(AgentActionError, match="agent 'cheater' chose an illegal action"):
        play_tournament([RandomAgent(0), IllegalAgent()], rules, 10, seed=0, progress=False)


def test_play_tournament__malformed_actions_name_the_agent():
    rules = SkyjoRules()
    with pytest.raises(AgentActionError, match="agent 'sloppy' returned actions of shape"):
        play_tournament([WrongShapeAgent(), RandomAgent(0)], rules, 10, seed=0, progress=False)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"games": 0}, "games must be"),
        ({"seed": -1}, "seed must be"),
        ({"agents": 3}, "3 agents for 2 seats"),
    ],
)
def test_play_tournament__bad_arguments(kwargs, message):
    count = kwargs.pop("agents", 2)
    arguments = {"games": 4, "seed": 0, **kwargs}
    agents = [RandomAgent(i) for i in range(count)]
    with pytest.raises(ValueError, match=message):
        play_tournament(agents, SkyjoRules(), progress=False, **arguments)


def test_play_tournament__duplicate_names_numbered_in_order():
    assert display_names(["ev", "ev", "greedy", "random", "greedy"]) == [
        "ev#1",
        "ev#2",
        "greedy#1",
        "random",
        "greedy#2",
    ]


def test_summarize__statistics_follow_the_engine_counters():
    rules = SkyjoRules(num_players=2)
    result = play_tournament([RandomAgent(1), RandomAgent(2)], rules, 100, 0, progress=False)
    records = result.records
    for i, stats in enumerate(result.agents):
        assert stats.games == 100
        assert stats.mean_total == pytest.approx(records.total[:, i].mean())
        assert stats.mean_round_score == pytest.approx(
            records.total[:, i].sum() / records.rounds.sum()
        )
        assert stats.mean_rounds_per_game == pytest.approx(records.rounds.mean())
        assert stats.finish_rate == pytest.approx(
            records.rounds_finished[:, i].sum() / records.rounds.sum()
        )
        assert 0 <= stats.penalty_rate <= 1
        low, high = stats.win_rate_ci
        assert 0 <= low <= stats.win_rate <= high <= 1
        assert stats.rating_sigma is not None and stats.rating_sigma < 25 / 3
    # every round is ended by exactly one seat
    assert sum(s.finish_rate for s in result.agents) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "agent, words",
    [
        (RaisingAgent(), "agent 'fragile' (spec 'my.module:Fragile') failed in act(): "
                         "RuntimeError: kaboom"),
        (OneArgumentAgent(), "agent 'forgetful' (spec 'my.module:Fragile') failed in act(): "
                             "TypeError"),
    ],
)
def test_play_tournament__failing_act_names_the_agent_and_spec(agent, words):
    with pytest.raises(AgentActionError) as error:
        play_tournament([RandomAgent(0), agent], SkyjoRules(), 4, seed=0, progress=False,
                        specs=["random", "my.module:Fragile"])
    assert words in str(error.value)
    assert isinstance(error.value.__cause__, (RuntimeError, TypeError))


def test_play_tournament__keyboard_interrupt_in_act_is_not_swallowed():
    class Interrupted:
        name = "sleepy"

        def act(self, observations, action_masks):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        play_tournament([RandomAgent(0), Interrupted()], SkyjoRules(), 2, 0, progress=False)


def test_play_games__too_many_games_refused_before_playing():
    rules = SkyjoRules()
    with pytest.raises(TooManyGamesError, match=f"at most {max_games(2)} games for 2 agents"):
        play_games([RandomAgent(0), RandomAgent(1)], rules, 10**12, seed=0)
    # the cap itself is allowed (checked without playing: one more game is refused)
    with pytest.raises(TooManyGamesError):
        play_games([RandomAgent(0), RandomAgent(1)], rules, max_games(2) + 1, seed=0)


@pytest.mark.parametrize("players", [2, 8])
def test_max_games__records_fit_the_memory_cap(players):
    limit = max_games(players)
    assert limit % players == 0 and limit > 10**6
    assert limit * record_bytes_per_game(players) <= MAX_RECORDS_BYTES
    # the estimate covers the arrays GameRecords really allocates
    sample = GameRecords.empty(10 * players, players)
    actual = sum(value.nbytes for value in vars(sample).values()) / (10 * players)
    assert actual <= record_bytes_per_game(players) <= actual + 48


def test_play_tournament__truncated_games_have_no_winner():
    # target 1 ends a game with its first round; a tight turn cap truncates some of them
    rules = SkyjoRules(max_turns_per_round=40, target_score=1)
    result = play_tournament([RandomAgent(0), RandomAgent(1)], rules, 40, 0, progress=False)
    records = result.records
    truncated = records.truncated
    assert truncated.any() and not truncated.all(), "want both kinds of game"
    assert (records.win_share[truncated] == 0).all()
    assert np.allclose(records.win_share[~truncated].sum(axis=1), 1.0)
    assert sum(stats.wins for stats in result.agents) == pytest.approx((~truncated).sum())
    assert sum(stats.win_rate for stats in result.agents) == pytest.approx(
        (~truncated).mean()
    )
    assert result.agents[0].truncated_games == truncated.sum()
    data = result.to_dict()
    assert data["truncated_games"] == truncated.sum()
    assert data["truncated_games_policy"] == TRUNCATED_POLICY
    assert f"warning: {truncated.sum()} game(s) truncated" in format_table(result)


def test_play_tournament__all_truncated_means_no_wins_and_no_rating_change():
    from openskill.models import PlackettLuce

    rules = SkyjoRules(max_turns_per_round=5)
    result = play_tournament([RandomAgent(0), RandomAgent(1)], rules, 6, 0, progress=False)
    assert result.records.truncated.all()
    initial = PlackettLuce().rating()
    for stats in result.agents:
        assert stats.wins == 0 and stats.win_rate == 0 and stats.win_rate_ci[0] == 0
        assert stats.rating_mu == pytest.approx(initial.mu)
        assert stats.rating_sigma == pytest.approx(initial.sigma)
    assert '"truncated_games": 6' in render_json(result)


def test_t_quantile_975__known_values():
    assert t_quantile_975(1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile_975(30) == pytest.approx(2.0423, abs=1e-4)
    assert t_quantile_975(31) == pytest.approx(2.0395, abs=1e-4)
    assert t_quantile_975(10) == pytest.approx(2.228, abs=1e-3)
    assert t_quantile_975(40) == pytest.approx(2.021, abs=1e-3)
    assert t_quantile_975(120) == pytest.approx(1.980, abs=1e-3)
    assert t_quantile_975(10**6) == pytest.approx(1.960, abs=1e-3)


def test_mean_confidence_interval__known_answer():
    mean, low, high = mean_confidence_interval(np.array([1.0, 2.0, 3.0, 4.0]))
    half = 3.182 * np.std([1, 2, 3, 4], ddof=1) / 2
    assert mean == 2.5 and low == pytest.approx(2.5 - half, abs=1e-3)
    assert high == pytest.approx(2.5 + half, abs=1e-3)


def test_win_rate_interval__falls_back_to_wilson_without_spread():
    rate, low, high = win_rate_interval(np.ones(100))
    assert rate == 1.0 and high == 1.0
    assert (low, high) == pytest.approx(wilson_interval(1.0, 100))
    assert 0.95 < low < 1.0
    assert wilson_interval(0.5, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)


@pytest.mark.parametrize("successes, trials", [(0, 1), (1, 1), (3, 10), (50, 100), (999, 1000)])
def test_wilson_interval__matches_scipy_for_whole_successes(successes, trials):
    from scipy.stats import binomtest

    expected = binomtest(successes, trials).proportion_ci(0.95, method="wilson")
    low, high = wilson_interval(successes / trials, trials)
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_wilson_interval__fractional_rate_lies_between_its_neighbours():
    # a deal group's mean share may be fractional: 2.5 successes of 5
    low, high = wilson_interval(0.5, 5)
    assert wilson_interval(0.4, 5)[0] < low < wilson_interval(0.6, 5)[0]
    assert low + high == pytest.approx(1.0)


@pytest.mark.parametrize("rate, trials, words", [(0.5, 0, "trials"), (1.5, 4, "rate")])
def test_wilson_interval__bad_input_is_named(rate, trials, words):
    with pytest.raises(ValueError, match=words):
        wilson_interval(rate, trials)


# --- heuristics (agents/heuristics.py) -------------------------------------------------


def test_play_tournament__greedy_beats_random():
    rules = SkyjoRules()
    result = play_tournament(
        [GreedyAgent(rules, seed=0), RandomAgent(1)], rules, 200, seed=0, progress=False
    )
    greedy, random = result.agents
    assert greedy.name == "greedy"
    assert greedy.win_rate_ci[0] > 0.5
    assert greedy.rating_mu > random.rating_mu
    assert greedy.mean_round_score < random.mean_round_score


def test_play_tournament__ev_beats_greedy():
    rules = SkyjoRules()
    result = play_tournament(
        [EVAgent(rules, seed=0), GreedyAgent(rules, seed=1)], rules, 400, seed=0, progress=False
    )
    ev, greedy = result.agents
    assert ev.name == "ev" and greedy.name == "greedy"
    assert ev.win_rate_ci[0] > 0.5
    assert ev.mean_total < greedy.mean_total


def test_play_tournament__progress_bar_counts_games(capsys):
    rules = SkyjoRules()
    result = play_tournament([RandomAgent(0), RandomAgent(1)], rules, 20, seed=0, progress=True)
    assert result.games == 20
    assert "/20 [" in capsys.readouterr().err
    play_tournament([RandomAgent(0), RandomAgent(1)], rules, 20, seed=0, progress=False)
    assert capsys.readouterr().err == ""
    play_tournament([RandomAgent(0), RandomAgent(1)], rules, 20, seed=0)  # not a terminal
    assert capsys.readouterr().err == ""


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_lines__one_line_per_interval_with_the_time_left():
    import io

    stream, clock = io.StringIO(), _Clock()
    with ProgressLines(2000, interval_s=60, stream=stream, clock=clock) as progress:
        clock.now += 30
        progress.update(100)  # before the interval: nothing
        assert stream.getvalue() == ""
        clock.now += 70  # 100 s in, 500 of 2000 done: 300 s left
        progress.update(400)
        clock.now += 10
        progress.update(500)  # 10 s after the last line: nothing
    assert stream.getvalue() == "games: 500/2000 (25%), 100 s, about 300 s left\n"


def test_progress_lines__name_the_unit_counted():
    import io

    stream, clock = io.StringIO(), _Clock()
    with ProgressLines(4096, interval_s=60, stream=stream, clock=clock,
                       unit="decisions") as progress:
        clock.now += 60
        progress.update(1024)
    assert stream.getvalue() == "decisions: 1024/4096 (25%), 60 s, about 180 s left\n"


def test_progress_lines__resumed_games_count_as_done_but_not_in_the_rate():
    import io

    stream, clock = io.StringIO(), _Clock()
    with ProgressLines(2000, interval_s=60, stream=stream, clock=clock, initial=1000) as progress:
        clock.now += 100  # 250 games in this run's 100 s: 750 left at that rate
        progress.update(250)
    assert stream.getvalue() == "games: 1250/2000 (62%), 100 s, about 300 s left\n"


def test_progress_lines__parallel_chunks_count_together_until_the_first_wave_is_done():
    import io

    stream, clock = io.StringIO(), _Clock()
    # two workers start a 100-game chunk each; the first ends at 100 s, its twin with it
    with ProgressLines(1000, interval_s=60, stream=stream, clock=clock,
                       in_flight=200) as progress:
        clock.now += 100
        progress.update(100)  # 200 of 1000 played at 100 s: 400 s left, not 900
        clock.now += 100
        progress.update(300)  # past the first wave: the plain rate, 400 in 200 s
    assert stream.getvalue() == (
        "games: 100/1000 (10%), 100 s, about 400 s left\n"
        "games: 400/1000 (40%), 200 s, about 300 s left\n"
    )


def test_progress_bar__lines_off_a_terminal_a_bar_on_request_nothing_when_off(monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert isinstance(progress_bar(10, None), ProgressLines)
    assert not isinstance(progress_bar(10, True), ProgressLines)
    quiet = progress_bar(10, False)
    assert not isinstance(quiet, ProgressLines) and quiet.disable


@pytest.mark.parametrize(
    "rate, text", [(0.3149, "0.31"), (2.5, "2.5"), (9.4, "9.4"), (25.03, "25"), (181.4, "181")]
)
def test_games_per_second_text__slow_runs_keep_two_significant_digits(rate, text):
    assert games_per_second_text(rate) == text

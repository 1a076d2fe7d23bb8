"""Search settings of issue #37: ``opponents=SPEC`` (another agent plays the other seats in
the rollouts) and ``lookahead=two`` (draw, take and discard valued by the best searched
follow-up, chosen per observation with cross-fitting)."""

from __future__ import annotations

import numpy as np
import pytest
from test_search import _observations_of_played_games

import agents.search.agent as search_module
from agents.registry import MAX_SPEC_LENGTH, AgentSpecError, make_agent
from agents.search import SearchAgent, SearchOptionError, SearchOptions
from agents.search.agent import MAX_OPPONENTS_LENGTH, FollowUps, _cross_fitted
from skyjo_env.core import SkyjoRules, layout, legal_action_mask, new_batch, reset, step
from skyjo_env.core.actions import ActionKind, Phase, action_id
from skyjo_env.encoding import ObservationEncoder

RULES = SkyjoRules()
SLOTS = RULES.num_slots
DRAW = action_id(ActionKind.DRAW, None, SLOTS)
TAKE = action_id(ActionKind.TAKE_DISCARD, None, SLOTS)
DISCARD = action_id(ActionKind.DISCARD_DRAWN, None, SLOTS)


def _place(slot: int) -> int:
    return action_id(ActionKind.PLACE, slot, SLOTS)


def _searched(rules, games, seed, every, rows):
    """``rows`` decisions the search decides (past the setup, two or more legal actions)."""
    observations, masks = _observations_of_played_games(rules, games=games, seed=seed,
                                                        every=every)
    phases = ObservationEncoder(rules).decode(observations)["phase"]
    keep = (masks.sum(axis=1) > 1) & (phases != Phase.INITIAL_REVEAL)
    return observations[keep][:rows], masks[keep][:rows]


# --- opponents=SPEC ----------------------------------------------------------------------


class _LegalEnd:
    """Plays the lowest (or highest) legal action id; reads no observation."""

    reads_observations = False

    def __init__(self, name: str, highest: bool):
        self.name, self.highest, self.rows = name, highest, 0

    def act(self, observations, masks):
        assert not observations.any()  # zeros: this agent reads none
        self.rows += len(masks)
        ids = np.arange(masks.shape[1])
        return np.where(masks, ids, -1).max(axis=1) if self.highest else \
            np.where(masks, ids, 10**6).min(axis=1)


def test_search__opponents_play_every_seat_but_seat_0_in_the_rollouts(monkeypatch):
    rules = SkyjoRules(num_players=3)
    observations, masks = _searched(rules, 1, 8, 5, rows=8)
    own, others = _LegalEnd("own", highest=True), _LegalEnd("others", highest=False)
    decided = {"own": 0, "others": 0}
    real = SearchAgent._rollout_actions

    def checked(self, state, live, actors):
        actions = real(self, state, live, actors)
        legal = legal_action_mask(state)[live]
        ids = np.arange(legal.shape[1])
        seat_0 = state.current_player[live] == 0
        expected = np.where(seat_0, np.where(legal, ids, -1).max(axis=1),
                            np.where(legal, ids, 10**6).min(axis=1))
        np.testing.assert_array_equal(actions[live], expected)
        assert (np.delete(actions, live) == -1).all()
        decided["own"] += int(seat_0.sum())
        decided["others"] += int((~seat_0).sum())
        return actions

    monkeypatch.setattr(SearchAgent, "_rollout_actions", checked)
    agent = SearchAgent(make_agent("ev", rules, 0), rules, seed=1,
                        options=SearchOptions(samples=3, depth=6), rollout_agent=own,
                        opponent_agent=others)
    actions = agent.act(observations, masks)
    assert masks[np.arange(8), actions].all()
    assert decided["own"] > 0 and decided["others"] > 0
    assert (own.rows, others.rows) == (decided["own"], decided["others"])


def test_search__an_opponent_like_the_rollout_agent_changes_nothing():
    """The split into seat 0's rows and the others' is the same play when both are ``ev``
    (which decides each row alone)."""
    rules = SkyjoRules(num_players=3)
    observations, masks = _searched(rules, 2, 4, 3, rows=30)
    options = SearchOptions(samples=3, depth=5, confidence_z=0)
    plain = SearchAgent(make_agent("ev", rules, 0), rules, seed=3, options=options)
    split = SearchAgent(make_agent("ev", rules, 0), rules, seed=3, options=options,
                        opponent_agent=make_agent("ev", rules, 9))
    actions, values = plain.act_with_values(observations, masks)
    split_actions, split_values = split.act_with_values(observations, masks)
    np.testing.assert_array_equal(split_actions, actions)
    np.testing.assert_array_equal(split_values.means, values.means)


def test_make_agent__opponents_spec_builds_the_named_agent():
    agent = make_agent("search(samples=2,depth=2,opponents=greedy):ev", RULES, 0)
    assert agent.options.opponents == "greedy" and agent.opponent_agent.name == "greedy"
    assert make_agent("search:ev", RULES, 0).opponent_agent is None
    # ':' and '/' in the option's value: a network path
    network = make_agent("search(samples=2,depth=2,opponents=ppo:models/ppo_2p.zip):ev", RULES, 0)
    assert network.opponent_agent.name != "ev" and network.base.name == "ev"
    observations, masks = _searched(RULES, 1, 2, 13, rows=4)
    assert masks[np.arange(4), network.act(observations, masks)].all()


@pytest.mark.parametrize("spec, words", [
    ("search(opponents=search:ev):ev", "search option opponents='search:ev' is a search"),
    ("search(opponents=search(samples=2):ev):ev", "is a search"),
    ("search(opponents=search):ev", "is a search"),
    ("search(opponents=nonsense):ev",
     "search option opponents: unknown agent spec 'nonsense'"),
    ("search(opponents=ppo:models/missing.zip):ev",
     "search option opponents: agent spec 'ppo:models/missing.zip': checkpoint"),
    ("search(opponents=" + "e" * MAX_SPEC_LENGTH + "):ev", "characters long; at most"),
    ("search(lookahead=three):ev", "lookahead must be one of one, two, got 'three'"),
])
def test_make_agent__bad_opponents_and_lookahead_are_one_line_errors(spec, words):
    with pytest.raises(AgentSpecError) as error:
        make_agent(spec, RULES, 0)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_search_options__opponents_must_be_a_short_spec():
    assert MAX_OPPONENTS_LENGTH == MAX_SPEC_LENGTH
    SearchOptions(opponents="e" * MAX_OPPONENTS_LENGTH)
    with pytest.raises(SearchOptionError, match="opponents is 1,025 characters long"):
        SearchOptions(opponents="e" * (MAX_OPPONENTS_LENGTH + 1))
    for bad in ("", "  ", 5):
        with pytest.raises(SearchOptionError, match="opponents must be an agent spec"):
            SearchOptions(opponents=bad)
    with pytest.raises(SearchOptionError, match="opponents=greedy needs opponent_agent"):
        SearchAgent(make_agent("ev", RULES, 0), RULES, seed=0,
                    options=SearchOptions(opponents="greedy"))


def test_spec_policy__the_web_server_refuses_search_opponents_and_critic(tmp_path):
    from agents.web.specs import SpecPolicy, SpecRejected

    with pytest.raises(SpecRejected, match="opponents is not offered"):
        SpecPolicy(tmp_path).resolve("search(opponents=ppo:/etc/x.zip):ev")
    with pytest.raises(SpecRejected, match="critic is not offered"):
        SpecPolicy(tmp_path).resolve("search(critic=/etc/x.zip):ev")


# --- critic=PATH: another network's value head at the leaves ------------------------------


def test_make_agent__critic_path_values_the_leaves_with_that_network():
    from agents.ppo.checkpoint import load_policy, read_metadata

    base = "models/ppo_2p_stage3.zip"
    own = make_agent(f"search:ppo:{base}", RULES, 0)
    other = make_agent(f"search(critic=models/ppo_2p.zip):ppo:{base}", RULES, 0)
    assert other.options.critic == "models/ppo_2p.zip" and other.base.name == own.base.name
    observations, _ = _searched(RULES, 1, 2, 13, rows=4)
    policy = load_policy("models/ppo_2p.zip", read_metadata("models/ppo_2p.zip"))
    from agents.search.values import CriticValue

    expected = CriticValue(policy, RULES, read_metadata("models/ppo_2p.zip")["config"]["shaping"])
    np.testing.assert_allclose(other.value_fn.values_of_observations(observations),
                               expected.values_of_observations(observations), rtol=1e-6)
    assert not np.allclose(own.value_fn.values_of_observations(observations),
                           expected.values_of_observations(observations))


def test_search__critic_naming_the_base_itself_plays_the_same_moves():
    base = "models/ppo_2p.zip"
    observations, masks = _searched(RULES, 2, 5, 7, rows=6)
    plain = make_agent(f"search(samples=4,depth=3):ppo:{base}", RULES, 3)
    named = make_agent(f"search(samples=4,depth=3,critic={base}):ppo:{base}", RULES, 3)
    np.testing.assert_array_equal(plain.act(observations, masks),
                                  named.act(observations, masks))


@pytest.mark.parametrize("spec, words", [
    ("search(leaf=margin,critic=models/ppo_2p.zip):ppo:models/ppo_2p.zip",
     "critic='models/ppo_2p.zip' needs leaf=critic"),
    ("search(critic=models/missing.zip):ppo:models/ppo_2p.zip",
     "search option critic: agent spec 'ppo:models/missing.zip': checkpoint"),
])
def test_make_agent__bad_critic_is_a_one_line_error(spec, words):
    with pytest.raises(AgentSpecError) as error:
        make_agent(spec, RULES, 0)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_search_options__critic_must_be_a_short_path_with_the_critic_leaf():
    SearchOptions(leaf="critic", critic="c" * MAX_OPPONENTS_LENGTH)
    with pytest.raises(SearchOptionError, match="critic is 1,025 characters long"):
        SearchOptions(leaf="critic", critic="c" * (MAX_OPPONENTS_LENGTH + 1))
    for bad in ("", "  ", 5):
        with pytest.raises(SearchOptionError, match="critic must be a checkpoint path"):
            SearchOptions(leaf="critic", critic=bad)


# --- lookahead=two: a hand-built position -------------------------------------------------


def _position(discard_top: int, known: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Seat 0 of a 2-player game to choose its source, slots 0.. face up holding ``known``,
    the others face down, ``discard_top`` on the discard pile: (observation (1, O), mask
    (1, A)). Cards are swapped with ones of the same deck, so every count stays true."""
    state = new_batch(RULES, 1)
    reset(state, np.random.default_rng(0))
    ev, encoder = make_agent("ev", RULES, 0), ObservationEncoder(RULES)
    while state.phase[0] == Phase.INITIAL_REVEAL:
        step(state, ev.act(encoder.encode(state, state.current_player),
                           legal_action_mask(state)))
    draw_size = int(state.game[0, layout.DRAW_SIZE])
    discard_size = int(state.game[0, layout.DISCARD_SIZE])
    state.slot_state[0] = layout.HIDDEN
    state.slot_state[0, 1, :2] = layout.FACE_UP
    state.slot_state[0, 0, :len(known)] = layout.FACE_UP
    cells = [("grid", (0, seat, slot)) for seat in range(2) for slot in range(SLOTS)]
    cells += [("draw_pile", (0, i)) for i in range(draw_size)]
    cells += [("discard_pile", (0, i)) for i in range(discard_size)]
    wanted = {("grid", (0, 0, slot)): value for slot, value in enumerate(known)}
    wanted[("discard_pile", (0, discard_size - 1))] = discard_top
    for cell, value in wanted.items():
        array = getattr(state, cell[0])
        if array[cell[1]] == value:
            continue
        donor = next(c for c in cells if c not in wanted and getattr(state, c[0])[c[1]] == value)
        donor_array = getattr(state, donor[0])
        array[cell[1]], donor_array[donor[1]] = value, array[cell[1]]
    state.game[0, layout.CURRENT] = 0
    state.game[0, layout.PHASE] = Phase.CHOOSE_SOURCE
    return encoder.encode(state, np.zeros(1, np.int64)), legal_action_mask(state)


class _TakesBadly:
    """Draws; places a drawn card well (on its highest face-up card if lower, else
    discards) but a taken discard card badly (on slot 0); reveals its first face-down."""

    name = "takes-badly"

    def __init__(self):
        self.decode = ObservationEncoder(RULES).decode

    def act(self, observations, masks):
        seen = self.decode(observations)
        actions = np.empty(len(masks), np.int64)
        for i, phase in enumerate(seen["phase"]):
            face_up = ~seen["own_hidden"][i] & ~seen["own_cleared"][i]
            if phase == Phase.CHOOSE_SOURCE:
                actions[i] = DRAW
            elif phase == Phase.PLACE_DISCARD:
                actions[i] = _place(int(np.flatnonzero(~seen["own_cleared"][i])[0]))
            elif phase == Phase.PLACE_DRAWN:
                values = np.where(face_up, seen["own_values"][i], -np.inf).reshape(-1)
                worst = int(values.argmax())
                actions[i] = _place(worst) if seen["held_card"][i] < values[worst] else DISCARD
            else:
                actions[i] = int(np.flatnonzero(masks[i])[0])
        return actions


def test_search__lookahead_two_values_take_by_its_best_placement():
    """A -2 on the discard pile and three 12s face up: taking it and placing it on a 12
    gains 14 points for sure, drawing about 7 on average. A base agent that draws, and
    places a taken card on slot 0 (a -2 already: no gain), makes the one-step search
    value take at 0 and draw: the two-step search values take by its best placement."""
    observation, mask = _position(discard_top=-2, known=(-2, 12, 12, 12))
    base = _TakesBadly()
    assert base.act(observation, mask)[0] == DRAW
    one, two = (SearchAgent(base, RULES, seed=4, options=SearchOptions(
        samples=32, depth=1, confidence_z=0, lookahead=lookahead)) for lookahead in ("one", "two"))
    one_values, two_values = (agent.action_values(observation, mask)[0][0] for agent in (one, two))
    assert one.act(observation, mask)[0] == DRAW
    assert two.act(observation, mask)[0] == TAKE
    # the same samples: take's follow-up swaps the -2 for a 12 instead of for the -2
    np.testing.assert_allclose(two_values[TAKE] - one_values[TAKE], 14.0)
    assert one_values[DRAW] > one_values[TAKE] and two_values[TAKE] > two_values[DRAW]


class _KnownSlots:
    """Seat 0's value: minus the sum of its slots 0..3 (face up in `_position`): no
    sample's face-down cards in it, so the best follow-up is known for each drawn card."""

    def __call__(self, state, round_ended):
        return -state.grid[:, 0, :4].sum(axis=1).astype(np.float64)


def test_search__lookahead_two_chooses_the_follow_up_per_drawn_card(monkeypatch):
    """After a draw the samples are grouped by the card drawn (all seat 0 sees changes
    with it), and each group gets its own follow-up: a card below 10 goes on the first 10
    (slot 1), an 11 or 12 on face-down slot 4 (the lowest id of the no-gain moves); a group
    met in one half of the samples only keeps the base agent's follow-up."""
    observation, mask = _position(discard_top=5, known=(-2, 10, 10, 10))
    seen = []
    real = search_module._cross_fitted

    def recording(follow, values):
        chosen, chosen_values = real(follow, values)
        seen.append((follow, chosen))
        return chosen, chosen_values

    monkeypatch.setattr(search_module, "_cross_fitted", recording)
    agent = SearchAgent(_TakesBadly(), RULES, seed=1, value_fn=_KnownSlots(),
                        options=SearchOptions(samples=64, depth=1, lookahead="two"))
    agent.action_values(observation, mask)
    (follow, chosen), = seen
    drawn = follow.pair_action[follow.pair] == DRAW
    held = follow.after.held_card
    for group in np.unique(follow.group[drawn]):
        members = follow.group == group
        assert np.unique(held[members]).size == 1  # one drawn card per group
    assert np.unique(follow.group[drawn]).size == np.unique(held[drawn]).size > 5
    halves = {(int(g), int(k % 2)) for g, k in zip(follow.group, follow.sample, strict=True)}
    both = np.array([(int(g), 0) in halves and (int(g), 1) in halves for g in follow.group])
    best = np.where(held <= 10, _place(1), _place(4))
    base = np.where(held < 10, _place(1), DISCARD)
    np.testing.assert_array_equal(chosen[drawn & both], best[drawn & both])
    np.testing.assert_array_equal(chosen[drawn & ~both], base[drawn & ~both])
    assert (drawn & both & (held > 10)).any() and (drawn & both & (held < 10)).any()
    # the taken 5 is one group: every sample sees the same
    assert np.unique(follow.group[~drawn]).size == 1
    assert (chosen[~drawn] == _place(1)).all()


# --- lookahead=two: cross-fitting ---------------------------------------------------------


def _follow_ups(groups, samples, base, candidates):
    """A `FollowUps` of one pair over ``samples`` games in ``groups``, every candidate of a
    game's group tried on it."""
    groups = np.asarray(groups)
    start, action = np.nonzero(candidates[groups])
    return FollowUps(np.array([0]), np.array([DRAW]), np.zeros(samples, np.int64),
                     np.arange(samples), groups, np.asarray(base), candidates, None, None,
                     start, action)


def test_cross_fitted__a_samples_value_comes_from_a_choice_made_without_it():
    candidates = np.zeros((2, 27), bool)
    candidates[:, [3, 5]] = True
    # group 0: the even samples favour 3, the odd ones 5; group 1: only even samples
    follow = _follow_ups([0, 0, 0, 0, 1, 1], 6, base=[5, 5], candidates=candidates)
    table = np.array([[9.0, 0.0], [0.0, 4.0], [9.0, 0.0], [0.0, 4.0], [1.0, 2.0], [7.0, 0.0]])
    # sample 5 is odd: group 1 has samples 4 (even) and 5 (odd), so both halves
    chosen, values = _cross_fitted(follow, table[follow.start, (follow.action == 5).astype(int)])
    # each half takes the other half's best: the evens get 5 (0 there), the odds 3 (0 there)
    np.testing.assert_array_equal(chosen[:4], [5, 3, 5, 3])
    np.testing.assert_array_equal(values[:4], 0.0)  # in-sample choices would give 9 and 4
    # group 1: sample 4 takes sample 5's best (3: 7 > 0), sample 5 takes sample 4's (5)
    np.testing.assert_array_equal(chosen[4:], [3, 5])
    np.testing.assert_array_equal(values[4:], [1.0, 0.0])
    # a group met in one half only: the base agent's follow-up
    lonely = _follow_ups([0, 0, 1, 0], 4, base=[3, 5], candidates=candidates)
    chosen, _ = _cross_fitted(lonely, np.zeros(lonely.start.size))
    assert chosen[2] == 5


class _Noise:
    """Independent noise per rollout: every follow-up is as good as another."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __call__(self, state, round_ended):
        return self.rng.normal(size=state.batch_size)


def test_search__lookahead_two_is_not_biased_by_the_best_of_noisy_follow_ups():
    """On pure noise the two-step value of draw and take has mean 0: the maximum over 13
    follow-ups' noisy means, taken on the same samples, would be well above it."""
    observations, masks = _searched(RULES, 3, 5, 2, rows=200)
    phases = ObservationEncoder(RULES).decode(observations)["phase"]
    source = phases == Phase.CHOOSE_SOURCE
    observations, masks = observations[source][:20], masks[source][:20]
    agent = SearchAgent(make_agent("ev", RULES, 0), RULES, seed=2, value_fn=_Noise(),
                        options=SearchOptions(samples=32, depth=1, lookahead="two"))
    values = agent.action_values(observations, masks)
    means = values.means[:, [DRAW, TAKE]][masks[:, [DRAW, TAKE]]]
    # each mean is of 32 unit-variance values: their average has standard error ~0.04
    assert abs(means.mean()) < 4 / np.sqrt(32 * means.size)


# --- lookahead=two: what stays one-step -----------------------------------------------------


def test_search__lookahead_two_keeps_the_one_step_value_of_every_other_action():
    """Placements, reveals and every row without a draw, take or discard keep the values
    of the one-step search (ev decides each row alone, so the other rows' extra rollouts
    change nothing)."""
    observations, masks = _searched(RULES, 2, 8, 3, rows=60)
    values = [SearchAgent(make_agent("ev", RULES, 0), RULES, seed=2, options=SearchOptions(
        samples=3, depth=4, lookahead=lookahead)).action_values(observations, masks)
        for lookahead in ("one", "two")]
    two_step = np.zeros_like(masks)
    two_step[:, [DRAW, TAKE, DISCARD]] = masks[:, [DRAW, TAKE, DISCARD]]
    assert two_step.any() and (masks & ~two_step).any()
    np.testing.assert_array_equal(values[1].means[masks & ~two_step],
                                  values[0].means[masks & ~two_step])
    assert (values[1].means[two_step] != values[0].means[two_step]).any()
    assert SearchOptions() == SearchOptions(lookahead="one")


def test_search__lookahead_two_respects_max_rollout_games(monkeypatch):
    observations, masks = _searched(RULES, 1, 3, 4, rows=6)
    sizes = []
    real = SearchAgent._rollout

    def counted(self, state, first_actions):
        sizes.append(state.batch_size)
        return real(self, state, first_actions)

    monkeypatch.setattr(SearchAgent, "_rollout", counted)
    spec = "search(samples=8,depth=2,lookahead=two{}):ev"
    whole = make_agent(spec.format(""), RULES, 5).action_values(observations, masks)
    sizes.clear()
    split = make_agent(spec.format(",max_rollout_games=30"), RULES, 5).action_values(
        observations, masks)
    assert max(sizes) <= 30
    np.testing.assert_array_equal(split.means, whole.means)

"""Heuristic agents: legality, no hidden information, and the ev fast path's exactness."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hidden_cards import assert_decisions_ignore_hidden_cards, redeal_hidden

from agents.baselines import ev
from agents.baselines.common import (
    HeuristicChoiceError,
    choice_error,
    first_illegal,
    layout_arrays,
)
from agents.baselines.heuristics import EVAgent, GreedyAgent
from skyjo_env.core import SkyjoRules, layout, legal_action_mask, load_rules, new_batch, reset, step
from skyjo_env.core.actions import Phase
from skyjo_env.encoding import ObservationEncoder, ObservationLayout
from skyjo_env.protocol import RandomAgent


def _play(rules: SkyjoRules, agents, games: int, seed: int, on_decision=None,
          phases: Counter | None = None) -> int:
    """Play ``games`` full games, seat p driven by ``agents[p]``; returns decisions made.

    ``phases``, if given, counts the decisions by ``(agent name, Phase)``.
    """
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    encoder = ObservationEncoder(rules)
    decisions = 0
    while not state.all_over:
        masks = legal_action_mask(state)
        observations = encoder.encode(state, state.current_player)
        actions = np.full(games, -1, np.int64)
        for seat, agent in enumerate(agents):
            rows = np.flatnonzero(~state.game_over & (state.current_player == seat))
            if rows.size:
                chosen = agent.act(observations[rows], masks[rows])
                assert masks[rows, chosen].all(), f"{agent.name} chose an illegal action"
                actions[rows] = chosen
                if phases is not None:
                    phases.update((agent.name, Phase(p)) for p in state.game[rows, layout.PHASE])
        if on_decision is not None:
            on_decision(state, observations, masks)
        step(state, actions)  # raises on any illegal action as well
        decisions += int((actions >= 0).sum())
    return decisions


@pytest.mark.parametrize("players", [2, 4, 8, 12])
@pytest.mark.parametrize("preset", [
    "official", pytest.param("online", marks=pytest.mark.slow),  # online: about 4x the time
])
def test_heuristics__only_legal_actions_over_full_games(players, preset):
    rules = load_rules(preset, num_players=players)
    cycle = [EVAgent(rules), GreedyAgent(rules), RandomAgent(1)]
    agents = [cycle[p % 3] for p in range(players)]
    games = 120 if players < 8 else 40
    assert _play(rules, agents, games, seed=players) > games * 20


def test_heuristics__small_grids_and_custom_decks_stay_legal():
    rules = SkyjoRules(rows=2, cols=3, deck={0: 10, 1: 10, 5: 10, 9: 6}, initial_reveals=1,
                       row_elimination=True, max_turns_per_round=300)
    assert _play(rules, [EVAgent(rules), GreedyAgent(rules)], 100, seed=3) > 100 * 6


_RULE_VARIANTS = {
    "official_2p": SkyjoRules(),
    "official_3p": SkyjoRules(num_players=3),
    "official_4p": SkyjoRules(num_players=4),
    "row_elimination_3p": SkyjoRules(num_players=3, row_elimination=True),
    "grid_2x2": SkyjoRules(rows=2, cols=2, initial_reveals=1),
    "no_initial_reveals": SkyjoRules(initial_reveals=0),
    "random_reveal_mode_3p": SkyjoRules(num_players=3, initial_reveal_mode="random"),
}


@pytest.mark.parametrize("variant", sorted(_RULE_VARIANTS))
def test_heuristics__choose_only_legal_actions_in_every_phase(variant):
    """No fallback hides a bad rule any more: `act` raises on a choice outside the mask
    and `_play` checks every action against the mask, so a rule that picks an illegal slot
    or source (or none) in any phase fails here."""
    rules = _RULE_VARIANTS[variant]
    agents = [EVAgent(rules) if seat % 2 == 0 else GreedyAgent(rules)
              for seat in range(rules.num_players)]
    phases = Counter()
    _play(rules, agents, games=16, seed=12, phases=phases)
    faced = {Phase.CHOOSE_SOURCE, Phase.PLACE_DRAWN, Phase.PLACE_DISCARD,
             Phase.REVEAL_AFTER_DISCARD}
    if rules.initial_reveals > 0 and rules.initial_reveal_mode == "choice":
        faced.add(Phase.INITIAL_REVEAL)
    for name in ("ev", "greedy"):
        decided = {phase for (agent, phase) in phases if agent == name}
        assert decided == faced, (name, decided)
        assert sum(n for (agent, _), n in phases.items() if agent == name) > 1000


def _decision_in_phase(rules: SkyjoRules, phase: Phase, seed: int):
    """``(observation (1, O), mask (1, A))`` of the first decision of ``phase`` in a
    seeded game played by ev."""
    state = new_batch(rules, 1)
    reset(state, np.random.default_rng(seed))
    encoder, player = ObservationEncoder(rules), EVAgent(rules)
    while state.game[0, layout.PHASE] != phase:
        step(state, player.act(encoder.encode(state, state.current_player),
                               legal_action_mask(state)))
    return encoder.encode(state, state.current_player), legal_action_mask(state)


@pytest.mark.parametrize("agent_class", [EVAgent, GreedyAgent])
@pytest.mark.parametrize(
    ("phase", "allowed"),
    [(Phase.CHOOSE_SOURCE, [0, 3]), (Phase.PLACE_DISCARD, [12, 26])],
    ids=["choose_source", "place_discard"],
)
def test_heuristics__mask_of_another_phase_raises_instead_of_a_substitute(
    agent_class, phase, allowed
):
    rules = SkyjoRules()
    observation, _ = _decision_in_phase(rules, phase, seed=4)
    wrong = np.zeros((1, 27), bool)
    wrong[0, allowed] = True  # reveals / draw + discard: nothing the observed phase allows
    with pytest.raises(HeuristicChoiceError, match=f"row 0's observation shows phase {phase.name} but"):
        agent_class(rules).act(observation, wrong)


def test_first_illegal__finds_the_first_choice_outside_its_mask():
    masks = np.array([[True, False, True], [True, False, False], [False, True, True]])
    assert first_illegal(masks, np.array([2, 0, 1])) == -1
    assert first_illegal(masks, np.array([2, 1, 0])) == 1
    assert first_illegal(masks, np.array([0, 0, -1])) == 2


def test_choice_error__names_an_illegal_choice():
    rules = SkyjoRules()
    observation, mask = _decision_in_phase(rules, Phase.PLACE_DISCARD, seed=4)
    phase_start = ObservationLayout(rules).describe()["phase"].start
    discard_drawn = 26  # a taken discard card must be placed
    error = choice_error("ev", rules, phase_start, 0, observation[0], mask[0], discard_drawn)
    assert isinstance(error, ValueError)
    assert "ev chose illegal action DISCARD_DRAWN (action 26) in row 0 (phase PLACE_DISCARD" in str(error)


def test_heuristics__decisions_ignore_hidden_cards():
    """At every decision of 16 three-player games, a twin game with every face-down card
    and the draw pile dealt again (`redeal_hidden`): ev and greedy decide the same there."""
    rules = SkyjoRules(num_players=3)
    encoder = ObservationEncoder(rules)
    pairs = [(EVAgent(rules, seed=1), EVAgent(rules, seed=1)),
             (GreedyAgent(rules, seed=1), GreedyAgent(rules, seed=1))]
    rng = np.random.default_rng(5)
    compared = [0]

    def compare(state, observations, masks):
        twin = redeal_hidden(state, rng)
        for pair in pairs:
            compared[0] += assert_decisions_ignore_hidden_cards(pair, state, twin, encoder)

    _play(rules, [EVAgent(rules), GreedyAgent(rules), EVAgent(rules)], 16, 9, compare)
    assert compared[0] > 2 * 16 * 50


def _random_column_grid(rng: np.random.Generator, rows: int, cols: int):
    """A grid as the engine can hold it: no complete face-up equal column left standing."""
    while True:
        values = rng.choice([5.0, 5.0, 7.0, -1.0, 3.0, 12.0, 0.0], rows * cols)
        hidden = rng.random(rows * cols) < rng.random()
        cleared = np.zeros(rows * cols, bool)
        for c in range(cols):
            if rng.random() < 0.2:
                cleared[c::cols] = True
                hidden[c::cols] = False
        grid, up = values.reshape(rows, cols), ~hidden.reshape(rows, cols)
        standing = ~cleared.reshape(rows, cols)[0]
        complete = up.all(axis=0) & (grid == grid[0]).all(axis=0) & standing
        if not complete.any():
            return values, hidden, cleared


def test_ev__per_slot_table_equals_the_generic_evaluation():
    """The fast column-local table must give exactly the generic copy-eliminate-sum values."""
    rules = SkyjoRules()
    _, geometry, _ = layout_arrays(rules)
    card_values = rules.card_values.astype(np.float64)
    low = int(card_values[0])
    slots, count = rules.num_slots, card_values.size
    scratch = (np.empty(slots), np.empty(slots, bool), np.empty(slots, bool))
    rng = np.random.default_rng(0)
    for _ in range(300):
        values, hidden, cleared = _random_column_grid(rng, rules.rows, rules.cols)
        probs = rng.dirichlet(np.ones(count))
        mu = float(probs @ card_values)
        chance = np.zeros(int(card_values[-1]) - low + 1)
        chance[(card_values - low).astype(int)] = probs
        final_lap = bool(rng.random() < 0.3)
        opponent_best = float(rng.normal(20, 10))
        fear = float(rng.choice([0.0, 0.4, 1.0]))
        ctx, col_terms = np.empty(3), np.zeros((rules.cols, 3))
        ev._grid_context(values, hidden, cleared, mu, chance, low, geometry, 0.4, ctx,
                                 col_terms)
        table = np.empty((slots, count))
        ev._outcome_table(values, hidden, cleared, ctx, col_terms, mu, card_values,
                                  chance, low, geometry, 0.4, final_lap, opponent_best, fear,
                                  *scratch, table)
        sv, sh, sc = scratch
        for s in np.flatnonzero(~cleared):
            for v in range(count):
                sv[:], sh[:], sc[:] = values, hidden, cleared
                sv[s], sh[s] = card_values[v], False
                ev._eliminate_at(sv, sh, sc, s, geometry)
                expected = ev._grid_value(sv, sh, sc, mu, chance, low, geometry, 0.4)
                if not final_lap and ev._count_hidden(sh, sc) == 0:
                    expected += ev._going_out_cost(
                        ev._known_sum(sv, sh, sc), opponent_best, geometry, fear
                    )
                assert table[s, v] == pytest.approx(expected), (s, v)


def test_agents__reject_observations_of_other_rules():
    agent = EVAgent(SkyjoRules())
    with pytest.raises(ValueError, match="features"):
        agent.act(np.zeros((1, 50), np.float32), np.ones((1, 27), bool))
    with pytest.raises(ValueError, match="at least one legal action"):
        GreedyAgent(SkyjoRules()).act(
            np.zeros((1, agent.size), np.float32), np.zeros((1, 27), bool)
        )

"""Hints: every legal move valued by the search, the network's probabilities, and odds.

`Hinter.analyse` takes one decision (an observation and its legal actions) and runs the
project's decision-time search (`agents.search.SearchAgent.action_values`) over every
legal action, in passes of `PASS_SAMPLES` sampled deals until `HINT_SAMPLES` are done or
the time cap would be passed (at least one pass). Passes are independent, so their means
are averaged and their standard errors combined as ``sqrt(sum se^2) / passes``. The
error bar of a move is the standard error of its paired advantage over the base agent's
own move (the same sampled deals), as the search uses it to decide.

The search runs over the strongest shipped network for the table size (`HINT_SETTINGS`:
its critic values the rollouts, in the training reward's units: round margin / 100, plus
or minus 1 for the game) or, where no network fits the rules, over ``ev`` (rollouts
valued by the round-score margin in points).

`odds` is the card-counting panel: the mean unseen card and the chance that a drawn card
is lower than the discard top or than each of the seat's cards.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.registry import AgentSpecError, make_agent
from agents.search import SearchAgent
from agents.web.games import action_text, phase_name
from agents.web.specs import FALLBACK_AGENT, SpecPolicy, default_network
from skyjo_env.core import Phase, SkyjoRules, decode_action, layout, unseen_counts
from skyjo_env.core.engine import BatchState

#: Sampled deals per hint when the time cap allows.
HINT_SAMPLES = 128
#: Sampled deals per pass (the time cap is checked between passes).
PASS_SAMPLES = 32
#: Rollout depth of the hint search (decisions after the valued move).
HINT_DEPTH = 12
#: How many standard errors the best move must beat the network's own by to be advised
#: instead (the `agents.search.PPO_SEARCH` setting).
HINT_CONFIDENCE_Z = 0.5
#: Search settings over a network: every legal move, the critic leaf.
HINT_SETTINGS = f"samples={PASS_SAMPLES},depth={HINT_DEPTH},leaf=critic"
#: Over ``ev`` (no network for these rules): the round-margin leaf.
HINT_SETTINGS_EV = f"samples={PASS_SAMPLES},depth=8"
#: Value units, for the page.
CRITIC_UNIT = "critic value: round margin / 100, +-1 for the game"
MARGIN_UNIT = "round-score margin in points"


@dataclass
class _Searcher:
    agent: SearchAgent
    network: bool
    base_spec: str
    lock: threading.Lock


class Hinter:
    """Builds and caches the hint search of each rules config, and answers hints.

    Args:
        policy: Where networks come from.
        time_cap_s: Most seconds of search per hint (checked between passes).
        cache_size: Rules configs whose searches stay loaded.
    """

    def __init__(self, policy: SpecPolicy, time_cap_s: float = 0.9, cache_size: int = 6):
        self.policy = policy
        self.time_cap_s = time_cap_s
        self.cache_size = cache_size
        self._cache: OrderedDict[SkyjoRules, _Searcher] = OrderedDict()
        self._lock = threading.Lock()

    def base_spec(self, rules: SkyjoRules) -> tuple[str, bool]:
        """The base agent the hints of ``rules`` search over, and whether it is a network."""
        return self._searcher(rules).base_spec, self._searcher(rules).network

    def _searcher(self, rules: SkyjoRules) -> _Searcher:
        with self._lock:
            if rules in self._cache:
                self._cache.move_to_end(rules)
                return self._cache[rules]
        searcher = self._build(rules)
        with self._lock:
            self._cache[rules] = searcher
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return searcher

    def _build(self, rules: SkyjoRules) -> _Searcher:
        stem = default_network(rules.num_players)
        if stem is not None and stem in self.policy.networks():
            path = self.policy.network_path(stem)
            try:
                agent = make_agent(f"search({HINT_SETTINGS}):ppo:{path}", rules, seed=0)
                return _Searcher(agent, True, f"ppo:{stem}", threading.Lock())
            except AgentSpecError:
                pass  # trained for other rules: search over ev instead
        agent = make_agent(f"search({HINT_SETTINGS_EV}):{FALLBACK_AGENT}", rules, seed=0)
        return _Searcher(agent, False, FALLBACK_AGENT, threading.Lock())

    def analyse(self, rules: SkyjoRules, observation: np.ndarray,
                legal: np.ndarray) -> dict[str, Any]:
        """Every legal move of one decision, valued, best first.

        Args:
            rules: The rules.
            observation: float32 (1, O), from the seat to act.
            legal: bool (1, A), its legal actions.

        Returns:
            ``moves`` (each ``action``, ``kind``, ``slot``, ``text``, ``value``,
            ``error``, ``probability``, ``network_choice``, ``recommended``), the
            ``recommended`` action, ``base`` (the searched agent), ``unit``, ``samples``
            and ``elapsed_ms``; values are None where the search does not decide (the
            initial reveals, a single legal move).
        """
        searcher = self._searcher(rules)
        agent = searcher.agent
        started = time.perf_counter()
        with searcher.lock:  # the agent's generator and network are not thread-safe
            probabilities = _probabilities(agent, observation, legal) if searcher.network \
                else None
            searched = bool(agent.searchable_rows(observation, legal)[0])
            if searched:
                means, errors, base, samples = self._passes(agent, observation, legal)
            else:
                base_action = int(agent.base.act(observation, legal)[0])
                means = errors = None
                base, samples = base_action, 0
        actions = np.flatnonzero(legal[0])
        recommended = base
        if means is not None:
            best = int(actions[np.argmax(means[actions])])
            if means[best] - means[base] > HINT_CONFIDENCE_Z * errors[best]:
                recommended = best
        discard_top = _discard_top(rules, observation)
        moves = []
        for action in actions:
            kind, slot = decode_action(int(action), rules.num_slots)
            moves.append({
                "action": int(action),
                "kind": kind.name.lower(),
                "slot": slot,
                "text": action_text(int(action), rules, discard_top),
                "value": None if means is None else _number(means[action]),
                "error": None if errors is None else _number(errors[action]),
                "probability": None if probabilities is None else _number(
                    probabilities[action]),
                "network_choice": int(action) == base,
                "recommended": int(action) == recommended,
            })
        moves.sort(key=lambda m: (m["value"] is None, -(m["value"] or 0.0),
                                  -(m["probability"] or 0.0), m["action"]))
        return {
            "moves": moves,
            "recommended": recommended,
            "recommended_text": action_text(recommended, rules, discard_top),
            "base": searcher.base_spec,
            "network": searcher.network,
            "unit": CRITIC_UNIT if searcher.network else MARGIN_UNIT,
            "samples": samples,
            "searched": searched,
            "elapsed_ms": round(1000 * (time.perf_counter() - started), 1),
        }

    def _passes(self, agent: SearchAgent, observation: np.ndarray, legal: np.ndarray):
        """Passes of `PASS_SAMPLES` deals until `HINT_SAMPLES` or the time cap: mean
        float64 (A,), standard error float64 (A,), the base action and the samples."""
        started = time.perf_counter()
        means, variances = [], []
        base = None
        while len(means) * PASS_SAMPLES < HINT_SAMPLES:
            pass_started = time.perf_counter()
            found = agent.action_values(observation, legal)
            means.append(found.means[0])
            variances.append(found.errors[0] ** 2)
            base = int(found.base_actions[0])
            now = time.perf_counter()
            if now - started + (now - pass_started) > self.time_cap_s:
                break
        count = len(means)
        mean = np.mean(means, axis=0)
        error = np.sqrt(np.sum(variances, axis=0)) / count
        return mean, error, base, count * PASS_SAMPLES


def _number(value: float) -> float | None:
    return None if not np.isfinite(value) else round(float(value), 4)


def _probabilities(agent: SearchAgent, observation: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The base network's probability of each action, float64 (A,)."""
    from agents.search import PolicyPrior

    logits = PolicyPrior(agent.base)(observation, legal)[0].astype(np.float64)
    logits = np.where(legal[0], logits, -np.inf)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def _discard_top(rules: SkyjoRules, observation: np.ndarray) -> int | None:
    from skyjo_env.encoding import ObservationLayout

    decoded = ObservationLayout(rules).decode(observation)
    if decoded["discard_pile_size"][0] == 0:
        return None
    return int(decoded["discard_top"][0])


def odds(state: BatchState, seat: int) -> dict[str, Any]:
    """Card counting from ``seat``'s point of view in game 0 of ``state``.

    Returns:
        ``unseen`` (``{"value", "count"}`` per card value, in increasing value order:
        copies the seat cannot place), ``unseen_total``,
        ``mean_unseen``, ``p_draw_beats_discard`` (chance that the top of the draw pile
        is lower than the discard top), ``slots`` (per own slot: ``p_draw_beats``, the
        chance that a drawn card is lower than it; for a face-down slot, lower than
        another unseen card), and while the seat holds a card ``held_card`` and
        ``p_held_beats_hidden`` (the chance it is lower than a face-down card).
    """
    rules = state.rules
    values = rules.card_values.astype(np.int64)
    unseen = unseen_counts(state, seat)[0].astype(np.int64)
    total = int(unseen.sum())
    result: dict[str, Any] = {
        "unseen": [{"value": int(v), "count": int(c)} for v, c in zip(values, unseen,
                                                                       strict=True)],
        "unseen_total": total,
        "mean_unseen": round(float((values * unseen).sum() / total), 3) if total else None,
    }

    def below(card: int) -> float | None:
        return round(float(unseen[values < card].sum() / total), 4) if total else None

    discard = state.discard_pile_of(0)
    result["p_draw_beats_discard"] = below(int(discard[-1])) if discard.size else None
    # two different unseen cards: P(first < second)
    pairs = total * (total - 1)
    lower_pairs = float(sum(unseen[i] * unseen[i + 1:].sum() for i in range(values.size)))
    p_hidden = round(lower_pairs / pairs, 4) if pairs else None
    slots = []
    for slot in range(rules.num_slots):
        slot_state = int(state.slot_state[0, seat, slot])
        if slot_state == layout.FACE_UP:
            card = int(state.grid[0, seat, slot])
            slots.append({"slot": slot, "state": "up", "value": card,
                          "p_draw_beats": below(card)})
        elif slot_state == layout.HIDDEN:
            slots.append({"slot": slot, "state": "hidden", "value": None,
                          "p_draw_beats": p_hidden})
        else:
            slots.append({"slot": slot, "state": "cleared", "value": None,
                          "p_draw_beats": None})
    result["slots"] = slots
    phase = int(state.phase[0])
    holds = phase == Phase.PLACE_DISCARD or (
        phase == Phase.PLACE_DRAWN and int(state.current_player[0]) == seat)
    if holds and total:
        held = int(state.held_card[0])
        result["held_card"] = held
        result["p_held_beats_hidden"] = round(float(unseen[values > held].sum() / total), 4)
    result["phase"] = phase_name(phase)
    return result


__all__ = [
    "CRITIC_UNIT",
    "HINT_SAMPLES",
    "HINT_SETTINGS",
    "MARGIN_UNIT",
    "PASS_SAMPLES",
    "Hinter",
    "odds",
]

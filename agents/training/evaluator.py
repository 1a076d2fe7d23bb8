"""The learner's evaluations during training: full games against each of
``eval_opponents`` on deals seeded from the master seed alone (`evaluate_learner`), with
the baselines built fresh for each evaluation (`EvaluationOpponents`)."""

from __future__ import annotations

from agents.evaluation.tournament import play_tournament
from agents.ppo.policy import PPOAgent
from agents.registry import make_agent
from agents.training.seeds import derived_seed
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import Agent


class EvaluationOpponents:
    """The baselines of the learner's evaluations, one agent per seat but the learner's.

    Every evaluation meets them as new: each is seeded from ``seed``, the spec's index and
    its seat alone, so no random state carries over from the previous evaluation. The
    first set is built here, which is what checks the specs before a run starts, and is
    handed to the first evaluation (`take`); each later evaluation builds its own.

    Args:
        specs: Agent specs (`agents.registry.make_agent`), distinct.
        rules: The rules the learner plays.
        seed: The evaluation seed (`agents.training.seeds.SEED_EVALUATION` of the run).

    Raises:
        AgentSpecError: A spec names no agent, or its agent cannot be built or loaded.
    """

    def __init__(self, specs: list[str], rules: SkyjoRules, seed: int):
        self.specs = list(specs)
        self.rules = rules
        self.seed = seed
        self._unused: dict[str, list[Agent]] | None = self._build()

    def _build(self) -> dict[str, list[Agent]]:
        return {
            spec: [make_agent(spec, self.rules, seed=derived_seed(self.seed, index, 1 + k))
                   for k in range(self.rules.num_players - 1)]
            for index, spec in enumerate(self.specs)
        }

    def take(self) -> dict[str, list[Agent]]:
        """The baselines of the next evaluation: ``{spec: [agent per other seat]}``, in
        spec order, never handed out before."""
        fresh, self._unused = self._unused, None
        return fresh if fresh is not None else self._build()


def evaluate_learner(model, rules: SkyjoRules, opponents: dict[str, list[Agent]], games: int,
                     seed: int) -> dict:
    """Full-game results of the learner against each baseline.

    Args:
        model: The MaskablePPO (or a policy) being trained; it acts greedily.
        rules: The rules it plays.
        opponents: ``{spec: [agent per other seat]}`` (`EvaluationOpponents.take`).
        games: Games per baseline (duplicated deals, seats rotated).
        seed: The evaluation seed; each baseline's deals come from it and the baseline's
            index alone.

    Returns:
        ``{spec: {"win_rate", "win_rate_ci", "mean_round_score", "mean_total"}}`` with the
        learner in every seat in turn and all other seats held by the baseline.
    """
    results = {}
    for index, (spec, others) in enumerate(opponents.items()):
        learner = PPOAgent(model, name="learner")
        outcome = play_tournament(
            [learner, *others], rules, games, derived_seed(seed, index, 0), progress=False,
            ratings=False,
        )
        stats = outcome.agents[0]
        results[spec] = {
            "win_rate": stats.win_rate,
            "win_rate_ci": list(stats.win_rate_ci),
            "mean_round_score": stats.mean_round_score,
            "mean_total": stats.mean_total,
        }
    return results

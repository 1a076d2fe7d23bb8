"""Fast action selection from a MaskablePPO policy, without SB3's distribution objects.

`PPOAgent.act` runs millions of times in evaluations and rollouts. sb3-contrib's
``policy.get_distribution`` builds a ``MaskableCategorical`` per call (two torch
``Categorical`` constructions, argument checks, a mask copy), which costs as much as the
network at a batch of one and a noticeable share at large batches. `MaskedActor` runs the
very same modules (features extractor, actor MLP, action head) and reproduces the distribution's
logits with the same float32 operations, so greedy actions, sampling probabilities and
hence samples drawn with the same generator are identical to the SB3 path:

1. ``logits = raw - logsumexp(raw)`` (``Categorical`` normalises the head's output),
2. ``where(mask, logits, -1e8)`` (sb3-contrib's masking value, not ``-inf``),
3. ``logits - logsumexp(logits)`` (``Categorical`` normalises again after masking).

Skipping either normalisation gives the same actions mathematically but not always in
float32: two legal logits a rounding step apart can collapse to a tie, which ``argmax``
breaks towards the lower action id.

The modules are used, not copied, so an actor over a policy that is being trained always
acts with the current weights.

``precision="bfloat16"`` runs the linear layers (actor MLP and action head) in bfloat16
under ``torch.autocast``; the features and both normalisations stay float32. It is
faster only on a CPU with native bfloat16 (AVX512-BF16 or AMX;
`benchmarks/search_agent.py` shows the effect on search rollouts). The probabilities
then differ from SB3's by bfloat16 rounding, so a greedy action can differ where two
legal logits are that close (docs/results.md); it is meant for search rollouts, not for
the agent's own decisions or for training.

`StackedActors` runs several float32 actors of one architecture (a training run's
snapshots) with one batched matrix product per layer, for the opponents of the training
games (`skyjo_env.protocol.SharedActing`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

#: sb3-contrib's ``MaskableCategorical`` logit for an illegal action
MASKED_LOGIT = -1e8
_MASKED = torch.tensor(MASKED_LOGIT, dtype=torch.float32)

#: Precisions `MaskedActor` can run its linear layers in.
PRECISIONS = ("float32", "bfloat16")

#: The activations `StackedActors` applies between linear layers (elementwise).
STACKABLE_ACTIVATIONS = {torch.nn.ReLU: torch.relu, torch.nn.Tanh: torch.tanh}


class PolicyInputError(ValueError):
    """Observations or action masks that do not fit the policy (shape, dtype, no legal
    action in a row)."""


def observation_batch(observations, size: int, single_too: bool) -> np.ndarray:
    """Contiguous float32 (N, ``size``) observations, or a `PolicyInputError` naming the
    shape; with ``single_too`` one observation (``size``,) is taken as a batch of one."""
    obs = np.ascontiguousarray(observations, dtype=np.float32)
    if single_too and obs.ndim == 1:
        obs = obs[None]
    if obs.ndim != 2 or obs.shape[1] != size:
        expected = f"(N, {size})" + (f" or ({size},)" if single_too else "")
        raise PolicyInputError(
            f"observations of shape {np.shape(observations)}: the policy expects {expected}")
    return obs


class MaskedActor:
    """The actor half of a ``MaskableActorCriticPolicy``: masked logits and actions.

    Args:
        policy: An sb3-contrib ``MaskableActorCriticPolicy`` with a discrete action space.
        precision: ``float32`` (SB3's exact logits) or ``bfloat16`` (linear layers under
            bfloat16 autocast: faster, logits within bfloat16 rounding; module docstring).

    Raises:
        ValueError: An unknown ``precision``.
    """

    def __init__(self, policy, precision: str = "float32"):
        if precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
            )
        self.precision = precision
        self.policy = policy
        self.observation_size = int(np.prod(policy.observation_space.shape))
        self.num_actions = int(policy.action_space.n)
        #: Hashable: the kinds and weight shapes of the actor's layers when it may act in
        #: a `StackedActors` batch (float32; linear layers with biases and
        #: `STACKABLE_ACTIVATIONS` only), else None.
        self.stack_key = stack_key(policy) if precision == "float32" else None

    def _latent(self, features: torch.Tensor) -> torch.Tensor:
        """The actor MLP, layer by layer (module calls cost microseconds each at batch 1)."""
        x = features
        for layer in self.policy.mlp_extractor.policy_net:
            if type(layer) is torch.nn.Linear:
                x = F.linear(x, layer.weight, layer.bias)
            elif type(layer) is torch.nn.ReLU:
                x = torch.relu_(x) if x is not features else torch.relu(x)
            else:
                x = layer(x)
        return x

    def masked_logits(self, observations: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Normalised log-probabilities of the masked distribution, as SB3 computes them.

        Args:
            observations: float32 (N, O).
            masks: bool (N, A), True where legal.

        Returns:
            float32 (N, A): equal to ``policy.get_distribution(observations,
            masks).distribution.logits`` (in float32 precision; within bfloat16 rounding
            of it in bfloat16).
        """
        policy = self.policy
        features = policy.extract_features(observations, policy.pi_features_extractor)
        return self.logits_from_features(features, masks)

    def logits_from_features(self, features: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """`masked_logits` from the features extractor's output.

        Args:
            features: float32 (N, F), ``policy.extract_features`` of the observations.
            masks: bool (N, A), True where legal.

        Returns:
            float32 (N, A), as `masked_logits`.
        """
        policy = self.policy
        if self.precision == "float32":
            raw = policy.action_net(self._latent(features))
        else:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                raw = policy.action_net(self._latent(features))
            raw = raw.float()
        return normalised_masked_logits(raw, masks)

    def act(
        self,
        observations: np.ndarray,
        action_masks: np.ndarray,
        deterministic: bool = True,
        generator: torch.Generator | None = None,
    ) -> np.ndarray:
        """Actions for a batch (or for one observation and its mask).

        Args:
            observations: float32 (N, O) or (O,).
            action_masks: bool (N, A) or (A,), True where legal.
            deterministic: The most probable legal action (lowest id on ties); else one
                sampled from the masked distribution with ``generator``.
            generator: Torch generator for sampling (torch's default one when None).

        Returns:
            int64 (N,).

        Raises:
            PolicyInputError: Shapes that do not fit the policy or each other, or a row
                without a legal action.
        """
        obs, masks = self._checked(observations, action_masks)
        with torch.inference_mode():
            logits = self.masked_logits(torch.from_numpy(obs), torch.from_numpy(masks))
            return self._chosen(logits, deterministic, generator)

    def act_on_features(
        self,
        features: torch.Tensor,
        action_masks: np.ndarray,
        deterministic: bool = True,
        generator: torch.Generator | None = None,
    ) -> np.ndarray:
        """`act` from the features of the observations (`PolicyFeatures`), already computed.

        Args:
            features: float32 (N, F): this policy's `PolicyFeatures` of the N observations,
                or rows of them computed with other rows (each row is a function of its own
                observation only).
            action_masks: bool (N, A), True where legal.
            deterministic, generator: As `act`.

        Returns:
            int64 (N,): the actions `act` would choose for those observations.

        Raises:
            PolicyInputError: Masks that do not fit the policy or the features, or a row
                without a legal action.
        """
        masks = self._checked_masks(action_masks, features.shape[0])
        with torch.inference_mode():
            logits = self.logits_from_features(features, torch.from_numpy(masks))
            return self._chosen(logits, deterministic, generator)

    @staticmethod
    def _chosen(logits: torch.Tensor, deterministic: bool,
                generator: torch.Generator | None) -> np.ndarray:
        """int64 (N,): the argmax of each row of ``logits`` (N, A), or a sample from it."""
        if deterministic:
            actions = logits.argmax(dim=1)
        else:
            actions = torch.multinomial(logits.softmax(dim=1), 1, generator=generator)[:, 0]
        return actions.numpy()

    def _checked(self, observations, action_masks) -> tuple[np.ndarray, np.ndarray]:
        """Contiguous float32 (N, O) observations and bool (N, A) masks, or an error."""
        obs = observation_batch(observations, self.observation_size, single_too=True)
        masks = np.ascontiguousarray(action_masks, dtype=bool)
        if np.ndim(observations) == 1:
            masks = masks.reshape(1, -1)
        return obs, self._checked_masks(masks, obs.shape[0], np.shape(action_masks))

    def _checked_masks(self, action_masks, rows: int, shown_shape=None) -> np.ndarray:
        """Contiguous bool (rows, A) masks with a legal action in every row, or an error
        (``shown_shape``: the shape to name, when the masks were reshaped)."""
        masks = np.ascontiguousarray(action_masks, dtype=bool)
        if masks.shape != (rows, self.num_actions):
            shown = np.shape(action_masks) if shown_shape is None else shown_shape
            raise PolicyInputError(
                f"action masks of shape {shown} for {rows} "
                f"observations: expected ({rows}, {self.num_actions})"
            )
        legal = masks.any(axis=1)
        if not legal.all():
            raise PolicyInputError(
                f"action mask row {int(np.flatnonzero(~legal)[0])} has no legal action"
            )
        return masks


def normalised_masked_logits(raw: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """The masked distribution's log-probabilities from the action head's output, with
    SB3's two normalisations (module docstring).

    Args:
        raw: float32 (N, A), the action head's output.
        masks: bool (N, A), True where legal.

    Returns:
        float32 (N, A).
    """
    logits = raw - raw.logsumexp(dim=1, keepdim=True)
    logits = torch.where(masks, logits, _MASKED)
    return logits - logits.logsumexp(dim=1, keepdim=True)


def _stack_plan(policy) -> list[torch.nn.Module] | None:
    """The actor's layers in order (actor MLP, then action head) when each is a linear
    layer with a bias or one of `STACKABLE_ACTIVATIONS`, else None."""
    layers = [*policy.mlp_extractor.policy_net, policy.action_net]
    for layer in layers:
        linear = type(layer) is torch.nn.Linear and layer.bias is not None
        if not linear and type(layer) not in STACKABLE_ACTIVATIONS:
            return None
    return layers


def stack_key(policy) -> tuple | None:
    """Hashable: each actor layer's kind and weight shape, or None when a layer cannot be
    stacked (`_stack_plan`). Actors with equal keys can share a `StackedActors` batch."""
    layers = _stack_plan(policy)
    if layers is None:
        return None
    return tuple(tuple(layer.weight.shape) if type(layer) is torch.nn.Linear
                 else type(layer).__name__ for layer in layers)


class StackedActors:
    """Greedy actions of several float32 `MaskedActor`s of one architecture (equal
    ``stack_key``, each with its own weights), with one batched matrix product per layer
    instead of a forward pass per actor.

    The actors' weights are stacked into (S, in, out) tensors and kept while later calls
    use those actors, or some of them, with weights unchanged in place (torch's version
    counters tell), so the copies are made when the actors change, not at every call; an
    actor that no call used for `KEEP_CALLS` calls leaves the stack when it is next built.
    Each actor's rows are padded to the most rows any actor has in the call.

    The actions are the ones each actor's `MaskedActor.act_on_features` chooses, except
    where two legal logits lie within float32 rounding of each other: a batched product
    may round differently from the actor's own (as the actor's own product rounds
    differently for batches of one to three rows than for larger ones).
    """

    #: Calls after which an actor none of them used leaves the stack at its next build.
    KEEP_CALLS = 64

    def __init__(self):
        self._actors: list[MaskedActor] = []
        self._linears: list[list[tuple[torch.Tensor, torch.Tensor]]] = []  # (weight, bias)
        self._versions: list[list[int]] = []
        self._last_used: list[int] = []
        self._calls = 0
        self._activations: list = []  # per layer: its function, or None for a linear one
        self._weights: list[torch.Tensor] = []  # per linear layer, float32 (S, in, out)
        self._biases: list[torch.Tensor] = []  # per linear layer, float32 (S, 1, out)

    def act(self, actors, members: np.ndarray, features: torch.Tensor,
            action_masks: np.ndarray) -> np.ndarray:
        """The greedy actions of ``actors`` for their rows.

        Args:
            actors: `MaskedActor`s with one ``stack_key`` (not None).
            members: int64 (K,), each row's actor, an index into ``actors``.
            features: float32 (K, F), each row's features (its actor's `PolicyFeatures`).
            action_masks: bool (K, A), True where legal.

        Returns:
            int64 (K,): row ``k``'s most probable legal action under
            ``actors[members[k]]`` (lowest id on ties).

        Raises:
            ValueError: Actors that cannot be stacked together, or ``members`` that are
                not (K,) indices into ``actors``.
            PolicyInputError: Masks that do not fit, or a row without a legal action.
        """
        rows = features.shape[0]
        _check_stackable(actors)
        masks = actors[0]._checked_masks(action_masks, rows)
        members = np.asarray(members)
        if (members.shape != (rows,) or members.dtype.kind not in "iu"
                or (rows and not 0 <= members.min() <= members.max() < len(actors))):
            raise ValueError(f"members must be {rows} indices into {len(actors)} actors, "
                             f"got shape {members.shape} of {members.dtype}")
        slots = self._slots(actors)[members.astype(np.int64)]
        with torch.inference_mode():
            raw = self._raw_logits(slots, features)
            logits = normalised_masked_logits(raw, torch.from_numpy(masks))
            return logits.argmax(dim=1).numpy()

    def _slots(self, actors) -> np.ndarray:
        """int64 (len(actors),): each actor's place in the stack, built anew when one is
        missing from it or its weights changed."""
        self._calls += 1
        place = {id(actor): slot for slot, actor in enumerate(self._actors)}
        slots = np.empty(len(actors), np.int64)
        for k, actor in enumerate(actors):
            slot = place.get(id(actor))
            if slot is None or not self._unchanged(slot):
                slots = self._build(actors)
                break
            slots[k] = slot
        for slot in slots:
            self._last_used[slot] = self._calls
        return slots

    def _unchanged(self, slot: int) -> bool:
        """Whether the weights stacked for the actor at ``slot`` are unchanged (changed in
        place, as an optimizer step or ``load_state_dict`` does, bumps their versions;
        layers replaced by new modules are not looked for)."""
        return _versions(self._linears[slot]) == self._versions[slot]

    def _build(self, actors) -> np.ndarray:
        """Stack ``actors`` and the actors used in the last `KEEP_CALLS` calls; returns
        the places of ``actors``."""
        wanted = {id(actor) for actor in actors}
        recent = [(actor, used) for actor, used in zip(self._actors, self._last_used, strict=True)
                  if used > self._calls - self.KEEP_CALLS and id(actor) not in wanted]
        self._actors = [*actors, *(actor for actor, _ in recent)]
        self._last_used = [0] * len(actors) + [used for _, used in recent]
        plans = [_stack_plan(actor.policy) for actor in self._actors]
        self._linears = [[(layer.weight, layer.bias) for layer in plan
                          if type(layer) is torch.nn.Linear] for plan in plans]
        self._versions = [_versions(linears) for linears in self._linears]
        self._activations = [None if type(layer) is torch.nn.Linear
                             else STACKABLE_ACTIVATIONS[type(layer)] for layer in plans[0]]
        with torch.inference_mode():
            self._weights = [torch.stack([weight.t() for weight, _ in layer]).contiguous()
                             for layer in zip(*self._linears, strict=True)]
            self._biases = [torch.stack([bias for _, bias in layer])[:, None, :].contiguous()
                            for layer in zip(*self._linears, strict=True)]
        return np.arange(len(actors), dtype=np.int64)

    def _raw_logits(self, slots: np.ndarray, features: torch.Tensor) -> torch.Tensor:
        """float32 (K, A): the action head's output for each row (features float32 (K, F))
        under the stacked actor at ``slots`` (int64 (K,)), rows padded per actor."""
        rows = len(slots)
        count = np.bincount(slots, minlength=len(self._actors))
        width = int(count.max())
        order = np.argsort(slots, kind="stable")
        rank = np.empty(rows, np.int64)
        rank[order] = np.arange(rows) - (np.cumsum(count) - count)[slots[order]]
        place = torch.from_numpy(slots * width + rank)
        x = features.new_zeros((len(self._actors) * width, features.shape[1]))
        x[place] = features
        x = x.view(len(self._actors), width, -1)
        linears = zip(self._biases, self._weights, strict=True)
        for activation in self._activations:
            if activation is None:
                bias, weight = next(linears)
                x = torch.baddbmm(bias, x, weight)
            else:
                x = activation(x)
        return x.reshape(len(self._actors) * width, -1)[place]


def _versions(linears: list[tuple[torch.Tensor, torch.Tensor]]) -> list[int]:
    """The in-place version counters of the (weight, bias) pairs ``linears``, in order."""
    return [tensor._version for pair in linears for tensor in pair]


def _check_stackable(actors) -> None:
    """Raise ValueError unless ``actors`` are one or more actors with one ``stack_key``."""
    keys = {actor.stack_key for actor in actors}
    if not actors or None in keys or len(keys) > 1:
        raise ValueError("StackedActors needs float32 actors of one stackable architecture "
                         f"(stack keys: {sorted(map(str, keys))})")


class PolicyFeatures:
    """A policy's features extractor as a shared observation transform
    (`skyjo_env.protocol.SharedFeatures`): policies whose extractors compute the same
    function (equal ``function_key``, e.g. two snapshots of one training run) may have
    the features of all their rows of a turn computed in one call.

    Args:
        policy: A ``MaskableActorCriticPolicy`` whose ``pi_features_extractor`` has a
            ``function_key`` (`agents.ppo.features.GridFeaturesExtractor`).

    Attributes:
        key: The extractor's ``function_key``.
    """

    def __init__(self, policy):
        self.policy = policy
        self.key = policy.pi_features_extractor.function_key
        self.observation_size = int(np.prod(policy.observation_space.shape))

    def __call__(self, observations: np.ndarray) -> torch.Tensor:
        """float32 (N, O) observations -> float32 (N, F) features, as `MaskedActor`
        computes them (row ``n`` depends on observation ``n`` alone).

        Raises:
            PolicyInputError: Observations that are not (N, O).
        """
        obs = observation_batch(observations, self.observation_size, single_too=False)
        policy = self.policy
        with torch.inference_mode():
            return policy.extract_features(torch.from_numpy(obs), policy.pi_features_extractor)


def policy_features(policy) -> PolicyFeatures | None:
    """`PolicyFeatures` of ``policy``, or None when its extractor has no ``function_key``
    (the plain observation, ``features: raw``, gains nothing from sharing)."""
    if getattr(policy.pi_features_extractor, "function_key", None) is None:
        return None
    return PolicyFeatures(policy)

"""Build agents from short command-line specs.

A spec is one of:

==============================  ===============================================================
spec                            agent
==============================  ===============================================================
``random``                      `skyjo_env.protocol.RandomAgent` (uniform over legal actions)
``greedy``                      `agents.baselines.heuristics.GreedyAgent`
``ev``                          `agents.baselines.heuristics.EVAgent`
``package.module:ClassName``    any class following the `Agent` protocol; built with
                                ``cls(rules=rules, seed=seed)`` when its signature takes
                                those, else ``cls()``
``ppo:PATH``                    a trained PPO checkpoint, via ``agents.ppo.load_ppo_agent``
``ppo:best``                    the strongest shipped network for the table size (the
                                rules' ``num_players``): the network of ``models/`` whose
                                card says ``strongest: true`` for that many players
                                (`best_network`); ``ppo:./best`` is a file called best
``search:BASE``                 `agents.search.SearchAgent`: decision-time rollouts of the
                                agent ``BASE`` (any spec, e.g. ``search:ev``,
                                ``search:ppo:best``), default settings
                                (`agents.search.SearchOptions`); over a ``ppo:PATH`` base
                                the measured best, `agents.search.PPO_SEARCH` (its critic
                                leaf, top 4 actions, switches retested)
``search(OPTIONS):BASE``        the same setting with only the named options changed,
                                ``OPTIONS`` = comma-separated ``key=value``
                                pairs, no spaces needed: ``samples`` (int, sampled games per
                                decision), ``depth`` (int, most rollout decisions),
                                ``budget_ms`` (number, time per decision),
                                ``max_rollout_games`` (int), ``confidence_z`` (number),
                                ``leaf`` (``margin`` or ``critic``: the value head of a
                                ``ppo:PATH`` base), ``top_actions`` (int, try only the
                                base policy's most probable actions, ``all`` for every
                                legal action; ``ppo:PATH`` base),
                                ``verify_samples`` (int, retest a switch on fresh samples),
                                ``rollout_precision`` (``float32`` or ``bfloat16``: the
                                rollouts' network precision; ``ppo:PATH`` base),
                                ``luck`` (``raw`` or ``adjusted``), ``opponents`` (an
                                agent spec without ``,`` or ``)``, not a search,
                                e.g. ``ev`` or ``ppo:models/x.zip``: plays the other
                                seats in the rollouts), ``lookahead`` (``one`` or
                                ``two``: value draw, take and discard by the best
                                searched follow-up), ``critic`` (a checkpoint path:
                                its value head values the leaves of ``leaf=critic``);
                                e.g.
                                ``search(samples=16,depth=40):ev``. Unnamed options keep
                                the setting ``search:BASE`` uses: ``PPO_SEARCH`` over a
                                ``ppo:PATH`` base (``search(samples=16):ppo:PATH`` is
                                ``PPO_SEARCH`` with 16 samples), the `SearchOptions`
                                defaults over any other
==============================  ===============================================================

``search`` is reserved: ``search:NAME`` never imports a module called ``search``. A search
over a search (``search:search:ev``) is refused: each level multiplies the cost of a
decision by its rollouts (about a hundred times), and no setting measured needs it. Every
numeric search option has an upper bound (`agents.search.OPTION_LIMITS`), and a spec
longer than `MAX_SPEC_LENGTH` characters is refused before it is parsed.

Imports that may not exist yet (the heuristics, the PPO module) happen only when the spec
asks for them, so a missing optional module never breaks the other specs.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import numpy as np

from skyjo_env.core.errors import one_line, shorten
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import Agent, RandomAgent

#: Named baselines: spec -> (module, class name), imported on demand.
BUILTIN_AGENTS: dict[str, tuple[str, str] | None] = {
    "random": None,
    "greedy": ("agents.baselines.heuristics", "GreedyAgent"),
    "ev": ("agents.baselines.heuristics", "EVAgent"),
}

VALID_FORMS = (
    "'random', 'greedy', 'ev', 'package.module:ClassName', 'ppo:PATH' (a PPO checkpoint), "
    "'ppo:best' (the strongest shipped network for the table size) or 'search:BASE' / "
    "'search(samples=N,depth=N,budget_ms=X):BASE' (search over BASE)"
)

#: The shipped networks: ``NAME.zip`` with its model card ``NAME.md`` (YAML front matter:
#: ``players``, ``strongest``, ...).
MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
#: Table sizes with a recipe, ``configs/recipes/{2..8}p.yaml`` (first, last).
RECIPE_PLAYERS = (2, 8)
#: The ``ppo:`` name of the strongest shipped network for the table size.
BEST_NETWORK = "best"
#: Longest spec `make_agent` reads (a checkpoint path fits many times over; a longer text is
#: refused in one short line instead of being parsed).
MAX_SPEC_LENGTH = 1024

#: Options of ``search(OPTIONS):BASE`` -> the type their values are read as
#: (``"int_or_all"``: an int, or ``all`` for None: no limit).
SEARCH_OPTIONS: dict[str, type | str] = {
    "samples": int,
    "depth": int,
    "budget_ms": float,
    "max_rollout_games": int,
    "confidence_z": float,
    "leaf": str,
    "top_actions": "int_or_all",
    "verify_samples": int,
    "rollout_precision": str,
    "luck": str,
    "opponents": str,
    "lookahead": str,
    "critic": str,
}


class AgentSpecError(ValueError):
    """A spec that names no agent, or an agent that cannot be built or loaded."""


def _act_signature_problem(act: object) -> str | None:
    """Why ``act`` cannot be called as ``act(observations, action_masks)``, or None.

    A callable whose signature Python cannot read (some builtins) is given the benefit of
    the doubt; the play loop still names the agent if the call then fails.
    """
    try:
        signature = inspect.signature(act)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(None, None)
    except TypeError as error:
        return f"act{signature} cannot be called as act(observations, action_masks) ({error})"
    return None


def _check_agent(agent: object, spec: str) -> Agent:
    act = getattr(agent, "act", None)
    name = getattr(agent, "name", None)
    if not callable(act):
        raise AgentSpecError(f"agent spec {spec!r}: {type(agent).__name__} has no act() method")
    problem = _act_signature_problem(act)
    if problem is not None:
        raise AgentSpecError(f"agent spec {spec!r}: {type(agent).__name__}.{problem}")
    if not isinstance(name, str) or not name:
        raise AgentSpecError(
            f"agent spec {spec!r}: {type(agent).__name__} has no non-empty 'name' string"
        )
    return agent  # type: ignore[return-value]


def _accepts(callable_: object, *names: str) -> bool:
    """Whether ``callable_`` takes every keyword in ``names`` (or ``**kwargs``)."""
    try:
        parameters = inspect.signature(callable_).parameters
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return True
    keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return all(n in parameters and parameters[n].kind in keyword_kinds for n in names)


def _construct(cls: type, rules: SkyjoRules, seed: int, spec: str) -> Agent:
    if not callable(cls):
        raise AgentSpecError(f"agent spec {spec!r}: {cls!r} is not a class")
    try:
        if _accepts(cls, "rules", "seed"):
            agent = cls(rules=rules, seed=seed)
        else:
            agent = cls()
    except Exception as error:  # the class's own error, reported with the spec
        raise AgentSpecError(
            f"agent spec {spec!r}: constructing {getattr(cls, '__name__', cls)} failed: "
            f"{one_line(error)}"
        ) from error
    return _check_agent(agent, spec)


def _import_class(module_name: str, class_name: str, spec: str) -> type:
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise AgentSpecError(
            f"agent spec {spec!r}: cannot import module {module_name!r} ({error})"
        ) from error
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise AgentSpecError(
            f"agent spec {spec!r}: module {module_name!r} has no attribute {class_name!r}"
        ) from None


def model_card(path: Path) -> dict:
    """The YAML front matter of a model card (``models/NAME.md``), ``{}`` when it has none
    or it does not read as a mapping."""
    import yaml

    from skyjo_env.core.safe_yaml import parse_yaml

    text = path.read_text()
    if not text.startswith("---\n"):
        return {}
    front, _, _ = text[4:].partition("\n---\n")
    try:
        data = parse_yaml(front)  # no aliases: a card cannot expand to gigabytes
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def best_network(num_players: int, models_dir: Path = MODELS_DIR) -> Path:
    """The strongest shipped network for ``num_players`` seats: the ``NAME.zip`` of
    ``models_dir`` whose card ``NAME.md`` says ``players: num_players`` and
    ``strongest: true``.

    Raises:
        AgentSpecError: no shipped network (or more than one) is the strongest for that
            table size; the message names the sizes that have one and the recipe.
    """
    marked, sizes = [], set()
    for card in sorted(models_dir.glob("*.md")):
        front = model_card(card)
        network = card.with_suffix(".zip")
        if not network.is_file() or not front.get("strongest"):
            continue
        sizes.add(front.get("players"))
        if front.get("players") == num_players:
            marked.append(network)
    if len(marked) == 1:
        return marked[0]
    if marked:
        raise AgentSpecError(
            f"'ppo:{BEST_NETWORK}': {len(marked)} shipped networks say they are the strongest "
            f"for {num_players} players ({', '.join(p.name for p in marked)}); fix their cards"
        )
    have = ", ".join(str(n) for n in sorted(n for n in sizes if isinstance(n, int))) or "none"
    recipe = (f"python train.py --config configs/recipes/{num_players}p.yaml"
              if RECIPE_PLAYERS[0] <= num_players <= RECIPE_PLAYERS[1] else
              f"a config of num_players: {num_players} (the recipes cover "
              f"{RECIPE_PLAYERS[0]} to {RECIPE_PLAYERS[1]} players)")
    raise AgentSpecError(
        f"'ppo:{BEST_NETWORK}': no shipped network plays {num_players} players (models/ has "
        f"them for {have}); train one with {recipe} and name it ppo:PATH"
    )


def _load_ppo(path_text: str, rules: SkyjoRules, seed: int, spec: str) -> Agent:
    if not path_text:
        raise AgentSpecError(f"agent spec {spec!r}: give a checkpoint path after 'ppo:'")
    if path_text == BEST_NETWORK:
        path_text = str(best_network(rules.num_players))
    path = Path(path_text)
    if not path.exists():
        raise AgentSpecError(f"agent spec {spec!r}: checkpoint {path_text!r} does not exist")
    try:
        ppo = importlib.import_module("agents.ppo")
    except ImportError as error:
        if getattr(error, "name", None) not in ("agents.ppo", None):
            # agents.ppo exists but one of its own imports failed: report that one
            raise AgentSpecError(
                f"agent spec {spec!r}: importing agents.ppo failed ({error})"
            ) from error
        raise AgentSpecError(
            f"agent spec {spec!r}: PPO checkpoints need the training module agents.ppo, "
            "which is not installed in this checkout"
        ) from error
    loader = getattr(ppo, "load_ppo_agent", None)
    if loader is None:
        raise AgentSpecError(f"agent spec {spec!r}: agents.ppo has no load_ppo_agent()")
    try:
        agent = loader(path, rules, seed)
    except Exception as error:  # corrupt or mismatched checkpoint
        raise AgentSpecError(
            f"agent spec {spec!r}: cannot load checkpoint {path_text!r}: {one_line(error)}"
        ) from error
    return _check_agent(agent, spec)


def _parse_search_options(text: str, spec: str) -> dict[str, int | float | str | None]:
    """``key=value,key=value`` (the inside of ``search(...)``) -> option values."""
    options: dict[str, int | float | str | None] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = (piece.strip() for piece in item.partition("="))
        if not equals or not key or not value:
            raise AgentSpecError(f"agent spec {spec!r}: search option {item!r} is not key=value")
        if key not in SEARCH_OPTIONS:
            raise AgentSpecError(
                f"agent spec {spec!r}: unknown search option {key!r}; "
                f"known: {', '.join(SEARCH_OPTIONS)}"
            )
        if key in options:
            raise AgentSpecError(f"agent spec {spec!r}: search option {key!r} given twice")
        options[key] = _read_option(key, value, spec)
    return options


def _read_option(key: str, value: str, spec: str) -> int | float | str | None:
    """One search option's value, read as `SEARCH_OPTIONS` says."""
    kind = SEARCH_OPTIONS[key]
    if kind == "int_or_all":
        if value == "all":
            return None
        kind = int
    try:
        return kind(value)
    except ValueError:
        wanted = {int: "an int", float: "a number"}[kind]
        if SEARCH_OPTIONS[key] == "int_or_all":
            wanted += " or 'all'"
        raise AgentSpecError(
            f"agent spec {spec!r}: search option {key}={value!r} is not {wanted}"
        ) from None


def _split_search(spec: str) -> tuple[str, str]:
    """``search(OPTIONS)REST`` or ``searchREST`` -> ``(OPTIONS, REST)``."""
    rest = spec[len("search") :]
    if not rest.startswith("("):
        return "", rest
    close = rest.find(")")
    if close < 0:
        raise AgentSpecError(f"agent spec {spec!r}: 'search(' without a closing ')'")
    return rest[1:close], rest[close + 1 :]


def _search_settings(options_text: str, spec: str, over_network: bool):
    """The `agents.search.SearchOptions` of an options text over a network base or another
    (`agents.search.search_options`), or an `AgentSpecError`."""
    options = _parse_search_options(options_text, spec)
    search = importlib.import_module("agents.search")
    try:
        return search.search_options(options, over_network)
    except search.SearchOptionError as error:
        raise AgentSpecError(f"agent spec {spec!r}: {error}") from None


def search_settings(prefix: str):
    """The settings of a search without its base: ``search`` or ``search(OPTIONS)``.

    For configs that name the search and supply the base later: expert iteration searches
    over the policy being trained, so the options change `agents.search.PPO_SEARCH`, as
    in ``search(OPTIONS):ppo:PATH``.

    Returns:
        An `agents.search.SearchOptions`.

    Raises:
        AgentSpecError: Not ``search``/``search(OPTIONS)``, or a bad option.
    """
    return _search_settings(search_options_text(prefix), prefix, over_network=True)


def search_options_text(prefix: str) -> str:
    """The ``OPTIONS`` of ``search(OPTIONS)`` (``""`` for ``search``), its form checked and
    its options not parsed.

    Raises:
        AgentSpecError: Not ``search`` or ``search(OPTIONS)`` (a base agent included, or
            no closing parenthesis).
    """
    if not prefix.startswith("search"):
        raise AgentSpecError(f"{prefix!r} is not 'search' or 'search(OPTIONS)'")
    options_text, rest = _split_search(prefix)
    if rest:
        raise AgentSpecError(
            f"{prefix!r}: expected 'search' or 'search(OPTIONS)' without a base agent"
        )
    return options_text


def _make_search(spec: str, rules: SkyjoRules, seed: int) -> Agent:
    """``search:BASE`` or ``search(OPTIONS):BASE``."""
    options_text, rest = _split_search(spec)
    if not rest.startswith(":") or not rest[1:].strip():
        raise AgentSpecError(
            f"agent spec {spec!r}: give a base agent spec after 'search:' "
            "(e.g. 'search:ev' or 'search(samples=16):ev')"
        )
    base_spec = rest[1:].strip()
    search = importlib.import_module("agents.search")
    if search.is_search_spec(base_spec):
        raise AgentSpecError(
            f"agent spec {spec!r}: a search over a search is refused (each level multiplies "
            "a decision's rollouts, about a hundred times); search over the base agent, "
            "with more samples or depth if wanted"
        )
    settings = _search_settings(options_text, spec, over_network=base_spec.startswith("ppo:"))
    base = make_agent(base_spec, rules, _spawned_seed(seed, 1))
    value_fn = prior_fn = rollout_agent = None
    if (settings.leaf == "critic" or settings.top_actions is not None
            or settings.rollout_precision != "float32"):
        value_fn, prior_fn, rollout_agent = _ppo_search_parts(
            base, base_spec, rules, spec, settings
        )
    opponent = _search_opponent(settings.opponents, rules, seed, spec)
    return _check_agent(
        search.SearchAgent(base, rules, seed, settings, value_fn, prior_fn, rollout_agent,
                           opponent),
        spec,
    )


def _spawned_seed(seed: int, key: int) -> int:
    """The seed of a search's ``key``-th inner agent (1: the base, 2: the opponents),
    spawned from the search agent's own, so each has a stream of its own."""
    return int(np.random.SeedSequence([seed, key]).generate_state(1)[0])


def _search_opponent(opponents: str | None, rules: SkyjoRules, seed: int, spec: str):
    """The agent of ``search(opponents=SPEC)`` (None without one), built like any spec with
    its own seed, spawned from the search agent's (the options refused a search before)."""
    if opponents is None:
        return None
    try:
        return make_agent(opponents, rules, _spawned_seed(seed, 2))
    except AgentSpecError as error:
        raise AgentSpecError(
            f"agent spec {shorten(repr(spec), 80)}: search option opponents: {error}"
        ) from None


def _ppo_search_parts(base: Agent, base_spec: str, rules: SkyjoRules, spec: str, settings):
    """The value function (``leaf=critic``: the value head, with the shaping weight
    recorded in the checkpoint's config), the action prior (``top_actions``) and the
    rollout agent (``rollout_precision``: the same network at that precision) of a
    ``ppo:PATH`` base agent; None for the parts the settings do not ask for."""
    if settings.leaf == "critic":
        wanted = "leaf=critic"
    elif settings.top_actions is not None:
        wanted = "top_actions"
    else:
        wanted = f"rollout_precision={settings.rollout_precision}"
    if not base_spec.startswith("ppo:"):
        raise AgentSpecError(
            f"agent spec {spec!r}: {wanted} needs a 'ppo:PATH' base agent (a network: its "
            f"value head, action priors or weights), got {base_spec!r}"
        )
    from agents.ppo.policy import PPOAgent
    from agents.search.values import CriticValueError, PolicyPrior

    try:
        value_fn = prior_fn = rollout_agent = None
        if settings.leaf == "critic":
            value_fn = _critic_value(base, base_spec, rules, spec, settings.critic)
        if settings.top_actions is not None:
            prior_fn = PolicyPrior(base)
    except CriticValueError as error:
        raise AgentSpecError(f"agent spec {spec!r}: {error}") from None
    if settings.rollout_precision != "float32":
        rollout_agent = PPOAgent(base.policy, name=base.name,
                                 deterministic=base.deterministic,
                                 precision=settings.rollout_precision)
    return value_fn, prior_fn, rollout_agent


def _critic_value(base: Agent, base_spec: str, rules: SkyjoRules, spec: str,
                  critic: str | None):
    """The leaf value of ``leaf=critic``: the value head of the base network, or with
    ``critic=PATH`` of that checkpoint (loaded as ``ppo:PATH``, so a file of other rules
    is refused like any network), each with the shaping weight and win bonus its training
    config records."""
    from agents.ppo.checkpoint import read_metadata
    from agents.search.values import CriticValue

    network, network_spec = base, base_spec
    if critic is not None:
        network_spec = f"ppo:{critic}"
        try:
            network = make_agent(network_spec, rules, 0)
        except AgentSpecError as error:
            raise AgentSpecError(
                f"agent spec {shorten(repr(spec), 80)}: search option critic: {error}"
            ) from None
    config = read_metadata(checkpoint_path(network_spec, rules.num_players)).get("config") or {}
    return CriticValue(getattr(network, "policy", None), rules, config.get("shaping", 0.0),
                       config.get("win_bonus", 0.0))


def checkpoint_path(spec: str, num_players: int | None = None) -> str | None:
    """The checkpoint a spec loads (``ppo:PATH``, ``search:ppo:PATH``,
    ``search(OPTIONS):ppo:PATH``), or None for a spec without one. The spec's form is not
    checked here (`make_agent` does).

    Args:
        spec: The agent spec.
        num_players: The table size, to say which file ``ppo:best`` loads
            (`best_network`); without it, ``ppo:best`` gives ``"best"``.
    """
    _, base = _search_levels(spec)
    if not base.startswith("ppo:"):
        return None
    path = base[len("ppo:"):]
    if path == BEST_NETWORK and num_players is not None:
        return str(best_network(num_players))
    return path


def checkpoint_paths(spec: str, num_players: int | None = None) -> list[str]:
    """Every checkpoint a spec loads: its base's (`checkpoint_path`), that of a search's
    ``opponents=SPEC`` (``search(opponents=ppo:PATH):ppo:PATH``) and its ``critic=PATH``,
    in that order, without repeats; empty for a spec without a network. The spec's form is not checked here
    (`make_agent` does): options that do not parse name no checkpoint.

    Args:
        spec: The agent spec.
        num_players: The table size, to say which file ``ppo:best`` loads.
    """
    options_texts, _ = _search_levels(spec)
    paths = [checkpoint_path(spec, num_players)]
    for options_text in options_texts:
        try:
            options = _parse_search_options(options_text, spec)
        except AgentSpecError:
            options = {}
        if isinstance(options.get("opponents"), str):
            paths.append(checkpoint_path(options["opponents"], num_players))
        if isinstance(options.get("critic"), str):
            paths.append(checkpoint_path(f"ppo:{options['critic']}", num_players))
    return list(dict.fromkeys(path for path in paths if path is not None))


def _search_levels(spec: str) -> tuple[list[str], str]:
    """``search(A):search(B):BASE`` -> ``(["A", "B"], "BASE")``: the options text of each
    search level, outermost first (``""`` for ``search:``), and the spec under them all."""
    options_texts, spec = [], spec.strip()
    while spec.startswith(("search:", "search(")):
        options_text, rest = _split_search(spec)
        options_texts.append(options_text)
        spec = rest[1:].strip()
    return options_texts, spec


def make_agent(spec: str, rules: SkyjoRules, seed: int) -> Agent:
    """Build the agent a spec names.

    Args:
        spec: ``random``, ``greedy``, ``ev``, ``package.module:ClassName``, ``ppo:PATH``,
            ``ppo:best``, ``search:BASE`` or ``search(OPTIONS):BASE`` (see the module
            docstring).
        rules: The rules the agent will play (its observation and action sizes follow them).
        seed: Seed of the agent's own random generator.

    Returns:
        An object with ``act(observations float32 (N, O), action_masks bool (N, A)) -> int64
        (N,)`` and a ``name`` string.

    Raises:
        AgentSpecError: (a `ValueError`) a spec longer than `MAX_SPEC_LENGTH`, a search
            over a search, unknown spec form, module or class not found, a
            class without ``act``/``name``, a missing or unloadable checkpoint, or
            ``agents.ppo`` not available for a ``ppo:`` spec, a ``search`` spec without a
            base, with an unknown option or a bad option value (or a bad base spec).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(
            f"empty agent spec {shorten(repr(spec), 60)}; valid forms: {VALID_FORMS}")
    spec = spec.strip()
    if len(spec) > MAX_SPEC_LENGTH:
        raise AgentSpecError(f"agent spec {shorten(repr(spec), 60)} is {len(spec):,} "
                             f"characters long; at most {MAX_SPEC_LENGTH:,}")
    if spec in BUILTIN_AGENTS:
        target = BUILTIN_AGENTS[spec]
        if target is None:
            return RandomAgent(seed)
        return _construct(_import_class(*target, spec), rules, seed, spec)
    if spec.startswith("ppo:"):
        return _load_ppo(spec[len("ppo:") :], rules, seed, spec)
    if spec.startswith(("search:", "search(")):
        return _make_search(spec, rules, seed)
    module_name, colon, class_name = spec.partition(":")
    if colon and module_name and class_name and all(
        part.isidentifier() for part in module_name.split(".") + [class_name]
    ):
        return _construct(_import_class(module_name, class_name, spec), rules, seed, spec)
    raise AgentSpecError(f"unknown agent spec {spec!r}; valid forms: {VALID_FORMS}")


__all__ = ["BEST_NETWORK", "BUILTIN_AGENTS", "MAX_SPEC_LENGTH", "MODELS_DIR", "VALID_FORMS",
           "AgentSpecError", "best_network", "checkpoint_path", "make_agent", "model_card"]

"""Which agent specs a web request may name, and the default agent of each table size.

A request names agents by registry spec (`agents.registry`), restricted to fixed forms so
that nothing it sends can load a file outside the model directory or run arbitrary code:

- ``random``, ``greedy``, ``ev``;
- ``ppo:NAME``: a network of the model directory, ``NAME`` a bare file name with or
  without ``.zip`` (``models/NAME.zip`` is read as ``NAME``); no other path;
- ``search:BASE`` and ``search(OPTIONS):BASE`` over one of the above, with the search's
  sample counts, depth and time capped (`SpecLimits`);
- ``package.module:ClassName`` only when the server was started with
  ``--allow-module-specs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agents.registry import BUILTIN_AGENTS, SEARCH_OPTIONS, AgentSpecError, best_network

#: The agent for table sizes (or rules) without a shipped network.
FALLBACK_AGENT = "ev"
#: Longest spec a request may send.
MAX_SPEC_LENGTH = 300

_NETWORK_NAME = re.compile(r"^(?:models/)?([A-Za-z0-9_][A-Za-z0-9_.-]{0,99}?)(?:\.zip)?$")
_MODULE_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class SpecRejected(ValueError):
    """A spec the web server refuses; the message says why."""


def default_network(num_players: int) -> str | None:
    """The stem of the strongest shipped network for ``num_players`` seats (what
    ``ppo:best`` loads: `agents.registry.best_network`), or None."""
    try:
        return best_network(num_players).stem
    except AgentSpecError:
        return None


#: The strongest shipped network of each table size (file stems in the model directory),
#: as the model cards say (`default_network`). Other sizes fall back to `FALLBACK_AGENT`.
DEFAULT_NETWORKS = {players: stem for players in range(2, 9)
                    if (stem := default_network(players)) is not None}


@dataclass(frozen=True)
class SpecLimits:
    """Bounds on the search options a request may ask for (each agent decision and each
    hint stays within a fraction of a second to a few seconds on one core).

    Attributes:
        samples: Most ``samples``.
        depth: Most ``depth``.
        verify_samples: Most ``verify_samples``.
        max_rollout_games: Most ``max_rollout_games``.
        budget_ms: Most ``budget_ms``.
    """

    samples: int = 256
    depth: int = 60
    verify_samples: int = 512
    max_rollout_games: int = 20000
    budget_ms: float = 2000.0


@dataclass(frozen=True)
class SpecPolicy:
    """Checks request specs and rewrites them for `agents.registry.make_agent`.

    Attributes:
        models_dir: The only directory ``ppo:NAME`` may load from.
        allow_module_specs: Accept ``package.module:ClassName``.
        limits: Bounds on search options.
    """

    models_dir: Path
    allow_module_specs: bool = False
    limits: SpecLimits = SpecLimits()

    def networks(self) -> list[str]:
        """Stems of the networks in the model directory, sorted."""
        if not self.models_dir.is_dir():
            return []
        return sorted(path.stem for path in self.models_dir.glob("*.zip") if path.is_file())

    def network_path(self, name: str) -> Path:
        """The checkpoint file of network ``name`` (a stem, ``NAME.zip`` or
        ``models/NAME.zip``) inside the model directory.

        Raises:
            SpecRejected: Not a bare name, or no such network.
        """
        match = _NETWORK_NAME.match(name)
        if match is None or ".." in name:
            raise SpecRejected(
                f"ppo:{name!r}: a network is named by its file name in the model directory "
                f"(e.g. ppo:ppo_2p_stage3), not a path"
            )
        root = self.models_dir.resolve()
        path = (root / f"{match.group(1)}.zip").resolve()
        if path.parent != root or not path.is_file():
            known = ", ".join(self.networks()) or "none"
            raise SpecRejected(f"ppo:{name!r}: no network of that name in the model "
                               f"directory (known: {known})")
        return path

    def resolve(self, spec: str) -> str:
        """The spec ``make_agent`` should build for request spec ``spec``.

        Raises:
            SpecRejected: A form outside the allowed ones, a network outside the model
                directory, or search options beyond `SpecLimits`.
        """
        if not isinstance(spec, str) or not spec.strip():
            raise SpecRejected("an agent spec must be a non-empty string")
        spec = spec.strip()
        if len(spec) > MAX_SPEC_LENGTH:
            raise SpecRejected(f"agent spec is {len(spec)} characters long; at most "
                               f"{MAX_SPEC_LENGTH}")
        return self._resolve(spec, nested=False)

    def _resolve(self, spec: str, nested: bool) -> str:
        if spec in BUILTIN_AGENTS:
            return spec
        if spec.startswith("ppo:"):
            return f"ppo:{self.network_path(spec[len('ppo:'):])}"
        if spec.startswith(("search:", "search(")):
            if nested:
                raise SpecRejected(f"{spec!r}: a search over a search is not offered")
            return self._resolve_search(spec)
        if _MODULE_SPEC.match(spec):
            if not self.allow_module_specs:
                raise SpecRejected(
                    f"{spec!r}: module:Class specs are refused unless the server was started "
                    "with --allow-module-specs"
                )
            return spec
        raise SpecRejected(
            f"unknown agent spec {spec!r}; this server accepts random, greedy, ev, "
            "ppo:NAME (a network of the model directory), search:BASE and "
            "search(OPTIONS):BASE" + (" and package.module:Class" if self.allow_module_specs
                                      else "")
        )

    def _resolve_search(self, spec: str) -> str:
        options_text, base = "", spec[len("search"):]
        if base.startswith("("):
            close = base.find(")")
            if close < 0:
                raise SpecRejected(f"{spec!r}: 'search(' without a closing ')'")
            options_text, base = base[1:close], base[close + 1:]
        if not base.startswith(":") or not base[1:].strip():
            raise SpecRejected(f"{spec!r}: give a base agent after 'search:'")
        base_spec = self._resolve(base[1:].strip(), nested=True)
        if options_text:
            self._check_search_options(options_text, spec)
            return f"search({options_text}):{base_spec}"
        return f"search:{base_spec}"

    def _check_search_options(self, text: str, spec: str) -> None:
        limits = self.limits
        bounds = {"samples": limits.samples, "depth": limits.depth,
                  "verify_samples": limits.verify_samples,
                  "max_rollout_games": limits.max_rollout_games, "budget_ms": limits.budget_ms}
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, _, value = (piece.strip() for piece in item.partition("="))
            if key not in SEARCH_OPTIONS:
                raise SpecRejected(f"{spec!r}: unknown search option {key!r}; known: "
                                   f"{', '.join(SEARCH_OPTIONS)}")
            if key in ("opponents", "critic"):  # a spec or a file, outside the checks above
                raise SpecRejected(f"{spec!r}: search option {key} is not offered by this "
                                   "server")
            if key in bounds:
                try:
                    number = float(value)
                except ValueError:
                    raise SpecRejected(f"{spec!r}: search option {key}={value!r} is not a "
                                       "number") from None
                if not number <= bounds[key]:
                    raise SpecRejected(f"{spec!r}: search option {key}={value} is over this "
                                       f"server's limit of {bounds[key]:g}")


__all__ = [
    "DEFAULT_NETWORKS",
    "FALLBACK_AGENT",
    "SpecLimits",
    "SpecPolicy",
    "SpecRejected",
    "default_network",
]

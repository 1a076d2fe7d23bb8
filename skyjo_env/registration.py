"""Gymnasium registration: ``gymnasium.make("skyjo_env/Skyjo-v0", ...)`` builds `SkyjoGymEnv`.

The id is registered once both ``skyjo_env`` and Gymnasium are imported, in either order,
without ``import skyjo_env`` importing Gymnasium (the engine stays free of RL libraries,
`tests/core/test_layering.py`). Gymnasium 1.x no longer loads plugins from package entry
points, so ``import skyjo_env`` calls `register_when_gymnasium_loads`, which

* registers at once when Gymnasium is already imported, or else
* leaves a one-shot import hook that registers right after Gymnasium defines its registry
  (``gymnasium.envs.registration``), whenever something first imports Gymnasium.

``gymnasium.make("skyjo_env:skyjo_env/Skyjo-v0")`` works as well, with nothing imported
beforehand: Gymnasium imports the module named before the colon.

The entry point, `make_single_agent_env`, takes `SkyjoGymEnv`'s arguments and, for
``rules``, also a preset name (``rules="single_round"``) or a rules YAML path.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from skyjo_env.core.errors import one_line
from skyjo_env.core.rules import SkyjoRules, load_rules

if TYPE_CHECKING:  # the annotation only: importing the view would import Gymnasium
    from skyjo_env.single_agent import SkyjoGymEnv

#: The single-agent view's Gymnasium id.
ENV_ID = "skyjo_env/Skyjo-v0"
#: What `gymnasium.make` calls (imported only then).
ENTRY_POINT = "skyjo_env.registration:make_single_agent_env"
#: The Gymnasium module that defines ``register`` and ``registry``.
GYMNASIUM_REGISTRATION = "gymnasium.envs.registration"


def make_single_agent_env(
    rules: SkyjoRules | str | Path | None = None, **kwargs: Any
) -> SkyjoGymEnv:
    """Build a `SkyjoGymEnv` (the entry point of ``skyjo_env/Skyjo-v0``).

    Args:
        rules: A `SkyjoRules`, a preset name from `available_presets()` (``"online"``), a
            path to a rules YAML file, or None for ``SkyjoRules(**rule fields in kwargs)``.
        **kwargs: `SkyjoGymEnv` arguments: ``opponents``, the `skyjo_env.options.EnvOptions`
            fields (``episode``, ``illegal_action``, ``illegal_penalty``, ``render_mode``)
            and `SkyjoRules` fields (``num_players=3``), which change the preset's values.

    Returns:
        The env, unwrapped (`gymnasium.make` adds its wrappers).

    Raises:
        ValueError: An unknown preset (the message lists the presets), a bad rules field or
            a bad option, as `SkyjoGymEnv` raises it.
    """
    from skyjo_env.single_agent import SkyjoGymEnv

    if isinstance(rules, (str, Path)):
        rules = load_rules(rules)
    return SkyjoGymEnv(rules, **kwargs)


def register_gymnasium_envs(registration: ModuleType) -> None:
    """Register ``skyjo_env/Skyjo-v0`` with Gymnasium (once; a second call does nothing).

    Args:
        registration: The module ``gymnasium.envs.registration``.
    """
    if ENV_ID not in registration.registry:  # re-registering makes Gymnasium warn
        registration.register(id=ENV_ID, entry_point=ENTRY_POINT)


def register_when_gymnasium_loads() -> None:
    """Register now if Gymnasium is imported, else when it is (without importing it)."""
    loaded = sys.modules.get(GYMNASIUM_REGISTRATION)
    if loaded is not None and hasattr(loaded, "registry"):
        register_gymnasium_envs(loaded)
    elif not any(isinstance(finder, _GymnasiumImportHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, _GymnasiumImportHook())


class _GymnasiumImportHook(importlib.abc.MetaPathFinder):
    """Finds ``gymnasium.envs.registration`` through the other finders and has its loader
    register our id right after the module runs; then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> Any:
        if fullname != GYMNASIUM_REGISTRATION:
            return None
        # one shot: out of the way before anything else, so the search below cannot recurse
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = None if find_spec is None else find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _RegisteringLoader(spec.loader)
                return spec
        return None


class _RegisteringLoader(importlib.abc.Loader):
    """Gymnasium's own loader, plus our registration once the module has run."""

    def __init__(self, loader: importlib.abc.Loader):
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        try:
            register_gymnasium_envs(module)
        except Exception as error:  # noqa: BLE001 - never break Gymnasium's own import
            warnings.warn(
                f"skyjo_env could not register {ENV_ID!r} with Gymnasium: {one_line(error)}",
                RuntimeWarning,
                stacklevel=2,
            )

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... as before
        return getattr(self._loader, name)

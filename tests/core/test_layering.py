"""The layers import only what lies below them (checked in fresh interpreters and in the
import statements), every module imports on its own, and no modules import each other in
a circle."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

RL_LIBRARIES = ("torch", "stable_baselines3", "sb3_contrib", "gymnasium", "pettingzoo", "agents")


def _imported_after(statement: str) -> list[str]:
    probe = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps([m for m in {RL_LIBRARIES!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # subprocess runs
@pytest.mark.parametrize(
    "statement, allowed",
    [
        ("import skyjo_env.core", ()),
        ("import skyjo_env", ()),
        # the Gymnasium id is registered by an import hook, not by importing Gymnasium
        ("import skyjo_env.registration", ()),
        ("from skyjo_env import env", ("gymnasium", "pettingzoo")),
        ("from skyjo_env import SkyjoGymEnv", ("gymnasium",)),
        ("import skyjo_env.rewards, skyjo_env.learner_games", ()),
    ],
)
def test_layering__engine_and_envs_import_nothing_above_them(statement, allowed):
    assert sorted(set(_imported_after(statement)) - set(allowed)) == []


# --- agents/: every module alone, the layers, no import cycle -------------------------------

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agents", "skyjo_env")

#: Each package of agents/ and what it must never import (not even inside a function):
#: the network agent, the baselines and search sit below evaluation and training, the
#: registry below evaluation and training, and training below the command lines.
NEVER_IMPORTS = {
    "agents.baselines": ("agents.training", "agents.evaluation", "agents.cli", "agents.sweep"),
    "agents.ppo": ("agents.training", "agents.evaluation", "agents.cli", "agents.sweep"),
    "agents.search": ("agents.training", "agents.evaluation", "agents.cli", "agents.sweep"),
    "agents.registry": ("agents.training", "agents.evaluation", "agents.cli", "agents.sweep"),
    "agents.evaluation": ("agents.training", "agents.cli", "agents.sweep"),
    "agents.training": ("agents.cli", "agents.sweep"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for package in PACKAGES
           for path in sorted((ROOT / package).rglob("*.py"))}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imported_modules(path: Path, type_checking: bool) -> set[str]:
    """Our modules that ``path`` imports anywhere (top level and inside functions); with
    ``type_checking`` also those under ``if TYPE_CHECKING:``. ``from P import m`` names
    the module ``P.m`` when it is one, else ``P``."""
    found = set()
    for node in _walk(ast.parse(path.read_text()), type_checking):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in MODULES else node.module)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def _walk(tree: ast.AST, type_checking: bool):
    for child in ast.iter_child_nodes(tree):
        if type_checking or not _is_type_checking_block(child):
            yield child
            yield from _walk(child, type_checking)


def _import_alone(module: str) -> tuple[int, str, list[str]]:
    """Import ``module`` in a fresh interpreter running this tree; returns the exit code,
    the last line of stderr and our modules that were imported."""
    probe = (
        f"import importlib, json, sys\nimportlib.import_module({module!r})\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {PACKAGES!r})))"
    )
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    lines = done.stdout.strip().splitlines()
    imported = json.loads(lines[-1]) if done.returncode == 0 and lines else []
    return done.returncode, (done.stderr.strip().splitlines() or [""])[-1], imported


@pytest.fixture(scope="module")
def imported_alone() -> dict[str, tuple[int, str, list[str]]]:
    """Every module of agents/ and skyjo_env/, each imported alone in a fresh interpreter
    (several at once: one interpreter per module is the slow part)."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip(MODULES, pool.map(_import_alone, MODULES), strict=True))


@pytest.mark.slow  # one fresh interpreter per module
@pytest.mark.parametrize("module", list(MODULES))
def test_every_module__imports_on_its_own_in_a_fresh_interpreter(module, imported_alone):
    returncode, error, _ = imported_alone[module]
    assert returncode == 0, f"import {module} alone failed: {error}"


@pytest.mark.slow  # reads the fresh interpreters of the test above
@pytest.mark.parametrize("package, forbidden", list(NEVER_IMPORTS.items()))
def test_layering__agents_packages_never_import_the_layers_above(package, forbidden,
                                                                 imported_alone):
    ours = [module for module in MODULES if _within(module, package)]
    assert ours, f"no module in {package}"
    # what importing each module really loads (package __init__ files included) ...
    loaded = {module: [m for m in imported_alone[module][2]
                       if any(_within(m, above) for above in forbidden)] for module in ours}
    assert {module: found for module, found in loaded.items() if found} == {}
    # ... and every import statement, also those inside functions that run later
    written = {module: sorted(m for m in _imported_modules(MODULES[module], type_checking=True)
                              if any(_within(m, above) for above in forbidden))
               for module in ours}
    assert {module: found for module, found in written.items() if found} == {}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module -> modules it imports), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_cycle__finds_a_cycle_and_accepts_a_layered_graph():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_imports__no_cycle_among_agents_and_skyjo_env_modules():
    # every import statement counts, also those inside functions (a lazy import only
    # hides a circle until that function runs); `if TYPE_CHECKING:` ones never run
    graph = {module: _imported_modules(path, type_checking=False) & set(MODULES) - {module}
             for module, path in MODULES.items()}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))

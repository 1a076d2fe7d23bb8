"""PPO checkpoints: weights and JSON metadata only, written atomically, loaded without
ever executing code from the file.

A checkpoint (format ``skyjo-rl-ppo/2``) is a zip with these members:

=====================  ==================================================================
member                 content
=====================  ==================================================================
``skyjo_meta.json``    what the network was trained for and how to rebuild it::

                           {"format": "skyjo-rl-ppo/2", "rules": {...},
                            "observation_version": 2, "observation_size": 108,
                            "num_actions": 27, "timesteps": 1234567,
                            "policy": {"net_arch": [256, 256], "activation": "relu",
                                       "features": "grid"}, "config": {...}, ...}
``policy.pth``         the policy's ``state_dict`` (``torch.save`` of plain tensors)
``optimizer.pth``      the Adam optimizer's ``state_dict`` (tensors, numbers, lists)
any extra member       bytes the trainer stores for resuming (e.g. ``training_state.json``)
=====================  ==================================================================

Loading builds the network from the metadata (`build_policy`) and reads the tensors with
``torch.load(..., weights_only=True)``, which refuses anything but tensors and plain
containers, so a crafted file cannot run code. Stable-Baselines3's own ``load`` is never
used: it cloudpickle-deserialises the ``data`` member, i.e. runs whatever the file says.
Old ``skyjo-rl-ppo/1`` checkpoints (written by ``MaskablePPO.save``) still load: their
``policy.pth`` is a plain state_dict, their optimizer is ``policy.optimizer.pth``, their
architecture is in ``metadata["config"]``, and their pickled ``data`` member is ignored.

Every problem (missing, truncated or corrupt file, bad metadata, tensors that do not fit
the architecture, a torch file that is not plain tensors) is a `CheckpointError` naming
the path and the problem.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.atomic import atomic_path
from agents.ppo.architecture import ACTIVATIONS, FEATURES, policy_kwargs
from skyjo_env.core.actions import num_actions
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import OBSERVATION_VERSION, ObservationLayout

CHECKPOINT_FORMAT = "skyjo-rl-ppo/2"
"""The format `save_checkpoint` writes."""
LEGACY_FORMAT = "skyjo-rl-ppo/1"
"""The format of checkpoints written by ``MaskablePPO.save`` plus our metadata."""
READABLE_FORMATS = (CHECKPOINT_FORMAT, LEGACY_FORMAT)

META_MEMBER = "skyjo_meta.json"
POLICY_MEMBER = "policy.pth"
OPTIMIZER_MEMBER = "optimizer.pth"
LEGACY_OPTIMIZER_MEMBER = "policy.optimizer.pth"
RESERVED_MEMBERS = (META_MEMBER, POLICY_MEMBER, OPTIMIZER_MEMBER)

# a crafted file must not make us allocate without bound: the shipped 256x256 networks
# are about 1 MB, so these limits leave room for far larger ones
MAX_MEMBER_BYTES = 1 << 30
MAX_LAYERS = 32
MAX_LAYER_WIDTH = 16384


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, or made for other rules or observations."""


def _where(path: str | Path) -> str:
    return f"checkpoint {str(path)!r}"


def _first_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}"


def checkpoint_metadata(rules: SkyjoRules, timesteps: int, **extra: Any) -> dict[str, Any]:
    """The metadata recorded in a checkpoint trained under ``rules``.

    ``extra`` usually holds ``config`` (the `TrainConfig` as a dict), from which
    `save_checkpoint` derives the ``policy`` entry when none is given.
    """
    return {
        "format": CHECKPOINT_FORMAT,
        "rules": rules.to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "observation_size": ObservationLayout(rules).size,
        "num_actions": num_actions(rules.num_slots),
        "timesteps": int(timesteps),
        **extra,
    }


# ---------------------------------------------------------------------------- architecture


def policy_architecture(metadata: Mapping[str, Any], path: str | Path = "<metadata>") -> dict:
    """The validated network description of a checkpoint's metadata.

    Taken from ``metadata["policy"]``, or, for checkpoints written before that entry
    existed, from the training config in ``metadata["config"]``.

    Returns:
        ``{"net_arch": list[int], "activation": str, "features": str}``.

    Raises:
        CheckpointError: Neither entry exists, or a field is missing or not allowed.
    """
    source = metadata.get("policy")
    if source is None:
        source = metadata.get("config")
    if not isinstance(source, Mapping):
        raise CheckpointError(
            f"{_where(path)} has no network description (no 'policy' or 'config' entry in "
            f"{META_MEMBER})"
        )
    net_arch = source.get("net_arch")
    if (
        not isinstance(net_arch, list)
        or not 1 <= len(net_arch) <= MAX_LAYERS
        or any(type(n) is not int or not 1 <= n <= MAX_LAYER_WIDTH for n in net_arch)
    ):
        raise CheckpointError(
            f"{_where(path)} has net_arch {net_arch!r}: expected 1 to {MAX_LAYERS} layer "
            f"widths, each an int in 1..{MAX_LAYER_WIDTH}"
        )
    activation, features = source.get("activation"), source.get("features")
    if activation not in ACTIVATIONS:
        raise CheckpointError(
            f"{_where(path)} has activation {activation!r}: allowed {list(ACTIVATIONS)}"
        )
    if features not in FEATURES:
        raise CheckpointError(f"{_where(path)} has features {features!r}: allowed {list(FEATURES)}")
    return {"net_arch": list(net_arch), "activation": activation, "features": features}


def describe_policy(policy) -> dict[str, Any]:
    """The ``policy`` metadata entry of a built MaskableActorCriticPolicy (when a
    checkpoint's metadata has no training config to derive it from)."""
    import torch

    from agents.ppo.features import features_name

    net_arch = policy.net_arch
    layers = net_arch["pi"] if isinstance(net_arch, Mapping) else net_arch
    names = {torch.nn.ReLU: "relu", torch.nn.Tanh: "tanh"}
    return {
        "net_arch": [int(n) for n in layers],
        "activation": names.get(policy.activation_fn, repr(policy.activation_fn)),
        "features": features_name(policy.features_extractor),
    }


def _metadata_rules(metadata: Mapping[str, Any], path: str | Path) -> SkyjoRules:
    try:
        return SkyjoRules.from_dict(metadata["rules"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{_where(path)} has unreadable rules: {error}") from error


def _inference_learning_rate(_progress_remaining: float) -> float:
    # SB3 builds the optimizer from a schedule; inference never steps it
    return 0.0


class InferenceOnlyOptimizer:
    """Stands in for the optimizer SB3 builds with every policy: a loaded policy only acts.

    Building a real torch optimizer imports ``torch._dynamo`` (about a second, once per
    process), which every ``ppo:PATH`` load paid: evaluations, ``skyjo-play``, each Ray
    worker. Training restores its own optimizer into the model's (`restore_model`).
    """

    def __init__(self, params, lr: float = 0.0, **kwargs):
        del params, lr, kwargs

    def __getattr__(self, name: str):
        raise AttributeError(
            f"this policy was loaded for inference and has no optimizer ({name!r}); "
            "restore a checkpoint into a model (restore_model) to train it"
        )


def build_policy(
    metadata: Mapping[str, Any], path: str | Path = "<metadata>", trainable: bool = True
):
    """A fresh, untrained sb3-contrib ``MaskableActorCriticPolicy`` on the CPU with the
    architecture a checkpoint's metadata records (the same ``policy_kwargs`` the trainer
    uses). The global torch random state is left as it was.

    Args:
        metadata: A checkpoint's metadata (`read_metadata`).
        path: Named in errors.
        trainable: Build SB3's Adam as ``policy.optimizer``; False puts an
            `InferenceOnlyOptimizer` there (a policy that only acts loads a second faster).

    Raises:
        CheckpointError: Unreadable rules or architecture, or an observation size or action
            count that these rules do not give.
    """
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from skyjo_env.options import observation_box

    architecture = policy_architecture(metadata, path)
    rules = _metadata_rules(metadata, path)
    observation_space = observation_box(rules)
    actions = num_actions(rules.num_slots)
    if metadata.get("observation_size") != observation_space.shape[0]:
        raise CheckpointError(
            f"{_where(path)} expects {metadata.get('observation_size')!r} observation "
            f"features; its rules give {observation_space.shape[0]}"
        )
    if metadata.get("num_actions") != actions:
        raise CheckpointError(
            f"{_where(path)} expects {metadata.get('num_actions')!r} actions; its rules "
            f"give {actions}"
        )
    # the random initialisation is overwritten by the loaded weights: keep it from
    # shifting the caller's torch random stream
    with torch.random.fork_rng(devices=[]):
        policy = MaskableActorCriticPolicy(
            observation_space, spaces.Discrete(actions), _inference_learning_rate,
            **({} if trainable else {"optimizer_class": InferenceOnlyOptimizer}),
            **policy_kwargs(architecture, rules),
        )
    return policy.to("cpu")


# ---------------------------------------------------------------------------- saving


def _serialise(value) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def save_checkpoint(
    model,
    path: str | Path,
    metadata: dict[str, Any],
    extra_members: Mapping[str, bytes] | None = None,
) -> Path:
    """Save ``model``'s policy and optimizer with ``metadata`` to ``path`` atomically (a
    temporary file, then a rename: a killed process never leaves half a checkpoint).

    Writes no pickled objects: ``skyjo_meta.json`` (``metadata`` with ``format`` set to
    ``skyjo-rl-ppo/2`` and a ``policy`` entry, derived from ``metadata["config"]`` when
    absent), ``policy.pth`` and ``optimizer.pth`` (state_dicts of tensors), and each
    ``extra_members`` entry under its own name.

    Args:
        model: A MaskablePPO (anything with ``.policy`` and ``.policy.optimizer``).
        path: Destination; ``.zip`` is appended when missing.
        metadata: JSON-serialisable; see `checkpoint_metadata`.
        extra_members: Member name -> bytes (the trainer's resume state).

    Returns:
        The path written.

    Raises:
        CheckpointError: The metadata's network description does not match the model, or
            an extra member is not bytes or reuses a reserved name.
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_name(path.name + ".zip")
    extra = dict(extra_members or {})
    for name, content in extra.items():
        if not isinstance(name, str) or not name or name in RESERVED_MEMBERS:
            raise CheckpointError(
                f"{_where(path)}: extra member name {name!r} is empty or reserved "
                f"({', '.join(RESERVED_MEMBERS)})"
            )
        if not isinstance(content, (bytes, bytearray)):
            raise CheckpointError(
                f"{_where(path)}: extra member {name!r} must be bytes, got {type(content).__name__}"
            )
    meta = dict(metadata)
    meta["format"] = CHECKPOINT_FORMAT
    if meta.get("policy") is None and meta.get("config") is None:
        meta["policy"] = describe_policy(model.policy)
    meta["policy"] = policy_architecture(meta, path)
    state = model.policy.state_dict()
    # refuse to write a checkpoint that would not load back into its own description
    _check_state(build_policy(meta, path, trainable=False).state_dict(), state, POLICY_MEMBER,
                 path, finite=False)
    members = {
        META_MEMBER: json.dumps(meta, indent=2, sort_keys=True).encode(),
        POLICY_MEMBER: _serialise(state),
        OPTIMIZER_MEMBER: _serialise(model.policy.optimizer.state_dict()),
        **{name: bytes(content) for name, content in extra.items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, suffix=".zip") as temporary:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, content in members.items():
                archive.writestr(name, content)
    return path


# ---------------------------------------------------------------------------- reading


def _open_archive(path: str | Path) -> zipfile.ZipFile:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{_where(path)} does not exist")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise CheckpointError(f"{_where(path)} is corrupt: {_first_line(error)}") from error


def read_member(path: str | Path, name: str) -> bytes:
    """The bytes of member ``name`` of a checkpoint.

    Raises:
        CheckpointError: The file is missing or corrupt, the member is missing, damaged
            or larger than 1 GiB.
    """
    with _open_archive(path) as archive:
        try:
            info = archive.getinfo(name)
        except KeyError:
            raise CheckpointError(f"{_where(path)} has no member {name!r}") from None
        if info.file_size > MAX_MEMBER_BYTES:
            raise CheckpointError(
                f"{_where(path)}: member {name!r} is {info.file_size} bytes, more than the "
                f"{MAX_MEMBER_BYTES} allowed"
            )
        try:
            return archive.read(info)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError) as error:
            raise CheckpointError(
                f"{_where(path)}: member {name!r} is corrupt: {_first_line(error)}"
            ) from error


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata of a checkpoint (format ``skyjo-rl-ppo/2`` or ``/1``).

    Raises:
        CheckpointError: The file is missing, not a zip, damaged, or has no valid
            skyjo-rl metadata.
    """
    with _open_archive(path) as archive:
        try:
            damaged = archive.testzip()  # reads every member: catches truncation, bad CRCs
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError) as error:
            raise CheckpointError(f"{_where(path)} is corrupt: {_first_line(error)}") from error
        if damaged is not None:
            raise CheckpointError(f"{_where(path)} is corrupt: bad data in {damaged}")
        if META_MEMBER not in archive.namelist():
            # also what a truncated checkpoint looks like: zipfile then finds the
            # directory of a zip nested inside it
            raise CheckpointError(
                f"{_where(path)} is corrupt or not a skyjo-rl checkpoint (no {META_MEMBER} inside)"
            )
    try:
        metadata = json.loads(read_member(path, META_MEMBER))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{_where(path)} has corrupt metadata: {_first_line(error)}") from error
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{_where(path)} has corrupt metadata: not a JSON object")
    if metadata.get("format") not in READABLE_FORMATS:
        raise CheckpointError(
            f"{_where(path)} has format {metadata.get('format')!r}, expected one of "
            f"{list(READABLE_FORMATS)}"
        )
    return metadata


def check_compatible(metadata: dict[str, Any], rules: SkyjoRules, path: str | Path) -> None:
    """Raise `CheckpointError` unless the checkpoint was trained for ``rules`` and this
    observation layout."""
    if metadata.get("observation_version") != OBSERVATION_VERSION:
        raise CheckpointError(
            f"{_where(path)} uses observation layout version "
            f"{metadata.get('observation_version')!r}; this skyjo-rl encodes version "
            f"{OBSERVATION_VERSION}"
        )
    trained = _metadata_rules(metadata, path)
    if trained != rules:
        wanted, got = rules.to_dict(), trained.to_dict()
        differing = [f"{k}={got[k]!r} (asked {wanted[k]!r})" for k in wanted if wanted[k] != got[k]]
        raise CheckpointError(f"{_where(path)} was trained for other rules: " + ", ".join(differing))
    if metadata.get("observation_size") != ObservationLayout(rules).size:
        raise CheckpointError(
            f"{_where(path)} expects {metadata.get('observation_size')} observation "
            f"features; these rules give {ObservationLayout(rules).size}"
        )


def check_initial_network(
    path: str | Path, rules: SkyjoRules, architecture: Mapping[str, Any]
) -> dict[str, Any]:
    """Check that a checkpoint can start a training run (``init_from``) of ``rules`` whose
    config builds ``architecture`` (`TrainConfig.policy_architecture`): the same rules and
    activation, as many hidden layers each at least as wide, and the same network input or
    an earlier kind of it (the `FEATURES` each extend the one before). A smaller network is
    grown into the config's: see `widened_state`.

    Returns:
        The checkpoint's metadata.

    Raises:
        CheckpointError: The file is missing or corrupt, was trained for other rules or
            another observation layout, or has another activation, another number of
            hidden layers, a wider one, or a later kind of features (each difference named).
    """
    metadata = read_metadata(path)
    check_compatible(metadata, rules, path)
    saved = policy_architecture(metadata, path)
    differing = []
    if not _grows_into(saved["net_arch"], architecture["net_arch"]):
        differing.append(f"net_arch {saved['net_arch']!r} (the config asks for "
                         f"{architecture['net_arch']!r}: it can only widen layers, not narrow, "
                         "add or remove them)")
    if saved["activation"] != architecture["activation"]:
        differing.append(f"activation {saved['activation']!r} (the config asks for "
                         f"{architecture['activation']!r})")
    if FEATURES.index(saved["features"]) > FEATURES.index(architecture["features"]):
        # an earlier kind is widened (`widened_state`); a later one would lose inputs
        differing.append(f"features {saved['features']!r} (the config asks for "
                         f"{architecture['features']!r}, which lacks some of its inputs)")
    if differing:
        raise CheckpointError(
            f"{_where(path)} is another network: " + ", ".join(differing)
            + "; set these config keys to the network's to start from it"
        )
    return metadata


def _grows_into(saved: list[int], wanted: list[int]) -> bool:
    """Whether hidden layers ``saved`` can be widened into ``wanted`` (same depth, no
    layer narrower)."""
    return len(saved) == len(wanted) and all(s <= w for s, w in zip(saved, wanted, strict=True))


#: The state_dict prefixes of the actor's and critic's layers, which `widened_state` grows.
_GROWN_LAYERS = ("mlp_extractor.", "action_net.", "value_net.")


def widened_state(saved: Mapping[str, Any], expected: Mapping[str, Any]) -> dict[str, Any]:
    """A policy state_dict of a smaller network (fewer input features, narrower hidden
    layers of the same depth) made to fit a larger one that computes exactly the same
    actions and values, and can learn to use what was added (net2net-style growth).

    ``expected`` is the larger network's freshly initialised state_dict. For each layer
    (weight (OUT, IN), bias (OUT,)) the saved block keeps its place at the top left; the
    saved units' weights from added inputs (new features, new units of the layer below) are
    zero, so they compute what they did; added units keep their fresh initialisation, and
    since every unit above ignores them (those zero weights), they change no output until
    training moves those weights. The `FEATURES` kinds each append columns to the one
    before, so new features are new last inputs. Every other entry is returned as it is
    (and checked by the caller).

    Args:
        saved: The checkpoint's ``policy.pth`` state_dict.
        expected: The larger policy's state_dict (its shapes, and its added units' values).

    Returns:
        A new dict; ``saved`` and ``expected`` are not modified.
    """
    import torch

    widened = dict(saved)
    for key, value in saved.items():
        target = expected.get(key)
        if (key.startswith(_GROWN_LAYERS) and isinstance(value, torch.Tensor)
                and isinstance(target, torch.Tensor) and value.ndim == target.ndim
                and value.ndim in (1, 2) and value.shape != target.shape
                and all(s <= t for s, t in zip(value.shape, target.shape, strict=True))):
            grown = target.detach().clone()
            if value.ndim == 1:
                grown[:value.shape[0]] = value
            else:
                grown[:value.shape[0], :value.shape[1]] = value
                grown[:value.shape[0], value.shape[1]:] = 0.0
            widened[key] = grown
    return widened


def load_policy_weights(path: str | Path, policy, widen: bool = False) -> None:
    """Load a checkpoint's policy weights (actor, critic, features) into ``policy``, a
    MaskableActorCriticPolicy of the same architecture (with ``widen``, or a larger one:
    more input features, wider hidden layers; `widened_state`); its optimizer is left
    alone.

    The tensors are read with ``weights_only=True`` and checked against ``policy`` first,
    so on an error ``policy`` is unchanged.

    Raises:
        CheckpointError: Any problem with the file or its tensors, or tensors that do not
            fit ``policy``.
    """
    state = _load_tensors(path, POLICY_MEMBER)
    if widen and isinstance(state, Mapping):
        state = widened_state(state, policy.state_dict())
    _check_state(policy.state_dict(), state, POLICY_MEMBER, path)
    policy.load_state_dict(state)


def _load_tensors(path: str | Path, name: str):
    """``torch.load`` of a member with ``weights_only=True``: tensors and plain containers
    only, so the file's pickle stream can name no function to call."""
    import torch

    content = read_member(path, name)
    try:
        return torch.load(io.BytesIO(content), weights_only=True, map_location="cpu")
    except Exception as error:  # torch raises UnpicklingError, RuntimeError, EOFError, ...
        raise CheckpointError(
            f"{_where(path)}: member {name!r} is not a plain tensor file ({_first_line(error)})"
        ) from error


def _check_state(
    expected: Mapping[str, Any], got, name: str, path: str | Path, finite: bool = True
) -> None:
    """Raise unless ``got`` has exactly ``expected``'s keys, each a tensor of the same
    shape (and, with ``finite``, no NaN or infinity)."""
    import torch

    if not isinstance(got, Mapping):
        raise CheckpointError(f"{_where(path)}: member {name!r} is not a state_dict")
    missing = [key for key in expected if key not in got]
    unexpected = [key for key in got if key not in expected]
    if missing or unexpected:
        raise CheckpointError(
            f"{_where(path)}: {name!r} does not fit the architecture in its metadata "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    for key, reference in expected.items():
        value = got[key]
        if not isinstance(value, torch.Tensor) or value.shape != reference.shape:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise CheckpointError(
                f"{_where(path)}: {name!r} entry {key!r} is {shape}, the architecture in its "
                f"metadata needs {tuple(reference.shape)}"
            )
        if finite and value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise CheckpointError(f"{_where(path)}: {name!r} entry {key!r} has non-finite values")


def load_policy(
    path: str | Path, metadata: dict[str, Any] | None = None, trainable: bool = False
):
    """The trained policy of a checkpoint, in evaluation mode, on the CPU, for acting (its
    ``optimizer`` is an `InferenceOnlyOptimizer`; `restore_model` continues training).
    With ``trainable`` it gets SB3's Adam instead, for fits of the policy on its own
    (`agents.training.imitation.clone_policy` in expert iteration).

    Builds the network from the metadata and loads ``policy.pth`` with
    ``weights_only=True``; works for both formats and never reads the ``data`` member.

    Args:
        path: The checkpoint.
        metadata: Its metadata when already read (`read_metadata`); read otherwise.
        trainable: Build the policy's optimizer (`build_policy`).

    Returns:
        An sb3-contrib ``MaskableActorCriticPolicy``.

    Raises:
        CheckpointError: Any problem with the file, its metadata or its tensors.
    """
    if metadata is None:
        metadata = read_metadata(path)
    policy = build_policy(metadata, path, trainable=trainable)
    load_policy_weights(path, policy)
    policy.set_training_mode(False)
    return policy


def _check_optimizer_state(optimizer, state, name: str, path: str | Path) -> None:
    """Raise unless ``state`` is an optimizer state_dict for ``optimizer``'s parameters
    (``load_state_dict`` checks group sizes but not the shapes of the moment tensors)."""
    import torch

    if not isinstance(state, Mapping) or not isinstance(state.get("param_groups"), list) \
            or not isinstance(state.get("state"), Mapping):
        raise CheckpointError(f"{_where(path)}: member {name!r} is not an optimizer state_dict")
    groups = optimizer.param_groups
    saved = state["param_groups"]
    if len(saved) != len(groups) or any(
        not isinstance(s, Mapping) or not isinstance(s.get("params"), list)
        or len(s["params"]) != len(g["params"])
        or any(type(index) is not int for index in s["params"])
        for s, g in zip(saved, groups, strict=True)
    ):
        raise CheckpointError(
            f"{_where(path)}: {name!r} has parameter groups that do not fit the model's optimizer"
        )
    parameters = {
        index: parameter
        for s, g in zip(saved, groups, strict=True)
        for index, parameter in zip(s["params"], g["params"], strict=True)
    }
    for index, entry in state["state"].items():
        if index not in parameters or not isinstance(entry, Mapping):
            raise CheckpointError(f"{_where(path)}: {name!r} has state for unknown parameter {index!r}")
        shape = parameters[index].shape
        for key, value in entry.items():
            if isinstance(value, torch.Tensor) and value.ndim > 0 and value.shape != shape:
                raise CheckpointError(
                    f"{_where(path)}: {name!r} state {key!r} of parameter {index} is "
                    f"{tuple(value.shape)}, the parameter is {tuple(shape)}"
                )
            if isinstance(value, float) and not math.isfinite(value):
                raise CheckpointError(f"{_where(path)}: {name!r} state {key!r} is not finite")


def restore_model(path: str | Path, model, metadata: dict[str, Any] | None = None) -> None:
    """Load a checkpoint's policy weights and optimizer state into ``model``, a
    MaskablePPO the trainer built from its config (to resume training).

    Both are read with ``weights_only=True`` and checked against ``model`` before either
    is loaded, so on an error ``model`` is unchanged.

    Raises:
        CheckpointError: Any problem with the file or its tensors, or tensors that do not
            fit ``model``'s network or optimizer.
    """
    if metadata is None:
        metadata = read_metadata(path)
    optimizer_member = (
        LEGACY_OPTIMIZER_MEMBER if metadata.get("format") == LEGACY_FORMAT else OPTIMIZER_MEMBER
    )
    policy_state = _load_tensors(path, POLICY_MEMBER)
    _check_state(model.policy.state_dict(), policy_state, POLICY_MEMBER, path)
    optimizer_state = _load_tensors(path, optimizer_member)
    _check_optimizer_state(model.policy.optimizer, optimizer_state, optimizer_member, path)
    previous = {key: value.clone() for key, value in model.policy.state_dict().items()}
    model.policy.load_state_dict(policy_state)
    try:
        model.policy.optimizer.load_state_dict(optimizer_state)
    except (ValueError, KeyError, TypeError, RuntimeError) as error:
        model.policy.load_state_dict(previous)  # leave the model as it was
        raise CheckpointError(
            f"{_where(path)}: {optimizer_member!r} does not fit the model's optimizer "
            f"({_first_line(error)})"
        ) from error

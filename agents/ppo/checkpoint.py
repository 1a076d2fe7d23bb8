"""PPO checkpoints: weights and JSON metadata only, written atomically, loaded without
ever executing code from the file, and checked completely before anything is built.

A checkpoint (format ``skyjo-rl-ppo/3``) is a zip with these members:

=====================  ==================================================================
member                 content
=====================  ==================================================================
``skyjo_meta.json``    what the network was trained for and how to rebuild it::

                           {"format": "skyjo-rl-ppo/3", "rules": {...},
                            "observation_version": 2, "observation_size": 108,
                            "num_actions": 27, "timesteps": 1234567,
                            "policy": {"net_arch": [256, 256], "activation": "relu",
                                       "features": "grid"}, "config": {...}, ...,
                            "integrity": {"algorithm": "sha256", "metadata": HEX,
                                          "members": {"policy.pth": HEX, ...}}}
``policy.pth``         the policy's ``state_dict`` (``torch.save`` of plain tensors)
``optimizer.pth``      the Adam optimizer's ``state_dict`` (tensors, numbers, lists)
any extra member       bytes the trainer stores for resuming (e.g. ``training_state.json``)
=====================  ==================================================================

Loading builds the network from the metadata (`build_policy`) and reads the tensors with
``torch.load(..., weights_only=True)``, which refuses anything but tensors and plain
containers, so a crafted file cannot run code. Stable-Baselines3's own ``load`` is never
used: it cloudpickle-deserialises the ``data`` member, i.e. runs whatever the file says.

Every loader (evaluate, skyjo-play, search bases, ``init_from``, resume, snapshots, Ray
workers, the web app) goes first through `read_metadata`, one validation pass: the zip's
directory (member count, plain names, sizes within `MAX_MEMBER_BYTES`), the metadata
(at most `MAX_METADATA_BYTES`, `MAX_JSON_DEPTH` deep, its schema: `validate_metadata`),
the network's size computed from it (at most `MAX_NETWORK_PARAMETERS`, before anything is
allocated), and the checksums: ``integrity`` records the sha256 of every other member
and of the metadata itself, so a member damaged or swapped, or metadata edited after
saving (an activation changed under trained tensors), is refused. The checksums guard
against accidents and careless edits, not against someone who recomputes them: they are
no signature.

Older formats still load, unchecked: ``skyjo-rl-ppo/2`` (the shipped networks) is ``/3``
without ``integrity``; ``skyjo-rl-ppo/1`` checkpoints (written by ``MaskablePPO.save``)
have a plain state_dict in ``policy.pth``, their optimizer in ``policy.optimizer.pth``,
their architecture in ``metadata["config"]``, and a pickled ``data`` member that is
ignored.

Every problem (missing, truncated or corrupt file, bad metadata, tensors that do not fit
the architecture, a torch file that is not plain tensors, a full disk when saving) is one
`CheckpointError` line naming the path, and the member and field where there is one.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import math
import re
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.atomic import atomic_path
from agents.ppo.architecture import ACTIVATIONS, FEATURES, policy_kwargs
from skyjo_env.core.actions import num_actions
from skyjo_env.core.errors import one_line, shorten
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import OBSERVATION_VERSION, ObservationLayout

CHECKPOINT_FORMAT = "skyjo-rl-ppo/3"
"""The format `save_checkpoint` writes: ``skyjo-rl-ppo/2`` plus checksums (``integrity``)."""
UNCHECKED_FORMAT = "skyjo-rl-ppo/2"
"""The format written before checksums: still read, with nothing to verify."""
LEGACY_FORMAT = "skyjo-rl-ppo/1"
"""The format of checkpoints written by ``MaskablePPO.save`` plus our metadata."""
READABLE_FORMATS = (CHECKPOINT_FORMAT, UNCHECKED_FORMAT, LEGACY_FORMAT)

META_MEMBER = "skyjo_meta.json"
POLICY_MEMBER = "policy.pth"
OPTIMIZER_MEMBER = "optimizer.pth"
LEGACY_OPTIMIZER_MEMBER = "policy.optimizer.pth"
RESERVED_MEMBERS = (META_MEMBER, POLICY_MEMBER, OPTIMIZER_MEMBER)

# Bounds on what a checkpoint can make a loader read, parse, allocate or build, all checked
# before the thing is read, parsed, allocated or built (docs/reliability.md lists them).
MAX_LAYERS = 32
MAX_LAYER_WIDTH = 16384
MAX_NETWORK_PARAMETERS = 1 << 24
"""The largest network a checkpoint may describe: 16,777,216 parameters (64 MiB of float32
weights; the shipped 256x256 networks have about 0.26 million). Counted from the metadata
(`network_parameter_count`) before anything is built: building and initialising a network
takes about 0.4 s per million parameters, so a file of a few KB cannot cost minutes or
gigabytes."""
MAX_MEMBERS = 32
MAX_MEMBER_BYTES = 256 << 20
"""The largest member (uncompressed): the optimizer of the largest network allowed (two
float32 moments per parameter) with room to spare."""
MAX_ARCHIVE_BYTES = 512 << 20
"""The most all members together may hold (uncompressed)."""
MAX_METADATA_BYTES = 1 << 20
MAX_JSON_DEPTH = 32
"""The deepest nesting of lists and objects a JSON member may have (the metadata needs 5)."""
MAX_TIMESTEPS = 1 << 53
"""The most steps a checkpoint may record (integers beyond it lose precision as floats)."""
INTEGRITY_ALGORITHM = "sha256"

class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, or made for other rules or observations."""


#: What zipfile and its decompressors raise on a damaged archive or member.
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
               RuntimeError, NotImplementedError, zlib.error, lzma.LZMAError)
#: A member name that stays a plain file name wherever it is extracted.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,99}")


def _where(path: str | Path) -> str:
    return f"checkpoint {str(path)!r}"


#: Characters of an underlying error that a checkpoint error repeats.
_CAUSE_LIMIT = 300


def is_plain_name(name: Any) -> bool:
    """Whether ``name`` is a plain file name (letters, digits, ``_``, ``.``, ``-``; at most
    100 characters; not starting with ``.`` or ``-``): joined to a directory, it names a
    file inside it, never ``..``, an absolute path or a hidden file."""
    return isinstance(name, str) and _PLAIN_NAME.fullmatch(name) is not None


# ---------------------------------------------------------------------------- documents


def _describe(value: Any) -> str:
    """A short repr of a value for a one-line message."""
    return shorten(repr(value), 60)


class DocumentCheck:
    """Checks the fields of one JSON document a checkpoint carries; every failure is one
    `CheckpointError` line naming the file, the member and the field (dotted:
    ``numpy_global.pos``).

    Args:
        path: The checkpoint (named in errors).
        member: The member the document came from (named in errors).
    """

    def __init__(self, path: str | Path, member: str):
        self.path = path
        self.member = member

    def error(self, field: str, problem: str) -> CheckpointError:
        """The error for ``field``: ``checkpoint 'P': MEMBER field 'F' PROBLEM``."""
        return CheckpointError(f"{_where(self.path)}: {self.member} field {field!r} {problem}")

    def bad(self, field: str, value: Any, expected: str) -> CheckpointError:
        """The error for a ``value`` of ``field`` that is not ``expected``."""
        return self.error(field, f"is {_describe(value)}: expected {expected}")

    def entry(self, document: Mapping[str, Any], key: str, field: str | None = None) -> Any:
        """``document[key]``, which must be present (``field`` names it; default ``key``)."""
        if key not in document:
            raise self.error(field or key, "is missing")
        return document[key]

    def mapping(self, value: Any, field: str) -> dict:
        """``value``, which must be a JSON object."""
        if not isinstance(value, dict):
            raise self.bad(field, value, "an object")
        return value

    def array(self, value: Any, field: str, max_length: int) -> list:
        """``value``, which must be a JSON list of at most ``max_length`` items."""
        if not isinstance(value, list) or len(value) > max_length:
            raise self.bad(field, value, f"a list of at most {max_length} items")
        return value

    def integer(self, value: Any, field: str, low: int = 0, high: int = MAX_TIMESTEPS) -> int:
        """``value``, which must be an int (not a bool) in ``low..high``."""
        if type(value) is not int or not low <= value <= high:
            raise self.bad(field, value, f"an int in {low}..{high}")
        return value

    def number(self, value: Any, field: str, low: float = -math.inf, high: float = math.inf,
               finite: bool = True) -> float:
        """``value``, which must be an int or float (not a bool), finite (with ``finite``)
        and in ``low..high``."""
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and finite:
            ok = math.isfinite(value) and low <= value <= high
        if not ok:
            bounds = f" in {low}..{high}" if (low, high) != (-math.inf, math.inf) else ""
            raise self.bad(field, value, f"a {'finite ' if finite else ''}number{bounds}")
        return float(value)

    def optional_number(self, value: Any, field: str, low: float = -math.inf,
                        high: float = math.inf) -> float | None:
        """``value``: None, or a finite number in ``low..high``."""
        return None if value is None else self.number(value, field, low, high)

    def string(self, value: Any, field: str, max_length: int = 200) -> str:
        """``value``, which must be a string of at most ``max_length`` characters."""
        if not isinstance(value, str) or len(value) > max_length:
            raise self.bad(field, value, f"a string of at most {max_length} characters")
        return value


def _json_depth(value: Any) -> int:
    """The nesting depth of a parsed JSON value (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def parse_json_member(content: bytes, path: str | Path, member: str) -> Any:
    """The JSON value of a checkpoint member's bytes, nested at most `MAX_JSON_DEPTH` deep.

    Raises:
        CheckpointError: Not UTF-8 JSON, a number that does not parse (an int of more than
            4300 digits), or nested too deep (naming the file and member).
    """
    where = f"{_where(path)}: member {member!r}"
    try:
        value = json.loads(content)
    except RecursionError:  # the decoder's own guard, at about 1000 levels
        raise CheckpointError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise CheckpointError(f"{where} is not valid JSON: {one_line(error, _CAUSE_LIMIT)}") from None
    if _json_depth(value) > MAX_JSON_DEPTH:
        raise CheckpointError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def _canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def metadata_digest(metadata: Mapping[str, Any]) -> str:
    """The sha256 (hex) of a checkpoint's metadata without its ``integrity`` entry, over
    its canonical JSON (sorted keys, no spaces), so that reading and re-serialising it
    gives the same digest."""
    unsigned = {key: value for key, value in metadata.items() if key != "integrity"}
    return hashlib.sha256(_canonical_json(unsigned)).hexdigest()


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
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as error:
        raise CheckpointError(
            f"{_where(path)} has unreadable rules: {shorten(str(error), 200)}"
        ) from error


def network_parameter_count(net_arch: list[int], rules: SkyjoRules) -> int:
    """An upper bound on the parameters of the policy a checkpoint describes, computed
    without building it: separate actor and critic MLPs of ``net_arch`` hidden layers over
    the widest network input of all `FEATURES` (the observation plus 9·S + 2·P + 10
    features), an action head and a value head."""
    widest_input = (ObservationLayout(rules).size + 9 * rules.num_slots
                    + 2 * rules.num_players + 10)
    widths = [widest_input, *net_arch]
    hidden = sum(fan_in * fan_out + fan_out
                 for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True))
    actions = num_actions(rules.num_slots)
    return 2 * hidden + (net_arch[-1] + 1) * actions + net_arch[-1] + 1


def check_network_size(architecture: Mapping[str, Any], rules: SkyjoRules,
                       path: str | Path = "<metadata>") -> int:
    """Refuse a network above `MAX_NETWORK_PARAMETERS` before anything is built.

    Returns:
        Its parameter count (`network_parameter_count`).

    Raises:
        CheckpointError: The network is larger (naming its size and the budget).
    """
    count = network_parameter_count(architecture["net_arch"], rules)
    if count > MAX_NETWORK_PARAMETERS:
        raise CheckpointError(
            f"{_where(path)} describes a network of net_arch {shorten(str(architecture['net_arch']), 80)} "
            f"with about {count:,} parameters: at most {MAX_NETWORK_PARAMETERS:,} are loaded"
        )
    return count


def validate_metadata(metadata: Any, path: str | Path = "<metadata>") -> dict[str, Any]:
    """Check a checkpoint's metadata against its schema, before anything is built from it.

    Checks the format, the rules, the observation and action sizes (which these rules
    give, for this observation version), ``timesteps``, the scores (win rates, in 0..1),
    the trainer's ``snapshots`` names, ``config`` and
    ``policy`` (a network of at most `MAX_NETWORK_PARAMETERS`) and, where present (always
    in ``skyjo-rl-ppo/3``), the ``integrity`` record and the metadata's own checksum.

    Returns:
        ``metadata``.

    Raises:
        CheckpointError: One line naming the file and the field.
    """
    check = DocumentCheck(path, META_MEMBER)
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{_where(path)} has corrupt metadata: not a JSON object")
    if metadata.get("format") not in READABLE_FORMATS:
        raise CheckpointError(
            f"{_where(path)} has format {_describe(metadata.get('format'))}, expected one of "
            f"{list(READABLE_FORMATS)}"
        )
    rules = _metadata_rules(metadata, path)
    version = check.integer(check.entry(metadata, "observation_version"), "observation_version",
                            0, 1 << 20)
    size = check.integer(check.entry(metadata, "observation_size"), "observation_size", 1, 1 << 20)
    actions = check.integer(check.entry(metadata, "num_actions"), "num_actions", 1, 1 << 20)
    if version == OBSERVATION_VERSION and size != ObservationLayout(rules).size:
        raise CheckpointError(
            f"{_where(path)} expects {size} observation features; its rules give "
            f"{ObservationLayout(rules).size}"
        )
    if actions != num_actions(rules.num_slots):
        raise CheckpointError(
            f"{_where(path)} expects {actions} actions; its rules give {num_actions(rules.num_slots)}"
        )
    check.integer(check.entry(metadata, "timesteps"), "timesteps")
    for key in ("score", "best_score", "best_pool_score"):  # win rates
        check.optional_number(metadata.get(key), key, 0.0, 1.0)
    if metadata.get("snapshots") is not None:  # the trainer's pool, by name
        for index, name in enumerate(check.array(metadata["snapshots"], "snapshots", 10_000)):
            if not is_plain_name(name):
                raise check.bad(f"snapshots.{index}", name, "a plain file name")
    for key in ("config", "policy"):
        if metadata.get(key) is not None:
            check.mapping(metadata[key], key)
    check_network_size(policy_architecture(metadata, path), rules, path)
    if metadata["format"] == CHECKPOINT_FORMAT or "integrity" in metadata:
        _check_integrity_record(metadata, check)
    return metadata


def _check_integrity_record(metadata: dict[str, Any], check: DocumentCheck) -> None:
    """The ``integrity`` entry: ``{"algorithm": "sha256", "metadata": HEX, "members":
    {name: HEX}}`` naming at least the policy and optimizer, and the metadata's digest."""
    record = check.mapping(check.entry(metadata, "integrity"), "integrity")
    if record.get("algorithm") != INTEGRITY_ALGORITHM:
        raise check.bad("integrity.algorithm", record.get("algorithm"), repr(INTEGRITY_ALGORITHM))
    digests = check.mapping(check.entry(record, "members", "integrity.members"),
                            "integrity.members")
    if len(digests) > MAX_MEMBERS:
        raise check.bad("integrity.members", f"{len(digests)} entries", f"at most {MAX_MEMBERS}")
    for name, digest in (("metadata", record.get("metadata")), *digests.items()):
        if not is_plain_name(name) or not _is_digest(digest):
            raise check.bad(f"integrity.members.{shorten(name, 60)}" if name != "metadata"
                            else "integrity.metadata", digest, "a sha256 hex digest")
    for name in (POLICY_MEMBER, OPTIMIZER_MEMBER):
        check.entry(digests, name, f"integrity.members.{name}")
    if metadata_digest(metadata) != record["metadata"]:
        raise CheckpointError(
            f"{_where(check.path)}: {META_MEMBER} does not match the checksum written with it: "
            "the metadata was changed after the checkpoint was saved (it may no longer "
            "describe its tensors)"
        )


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


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
        CheckpointError: Unreadable rules or architecture, a network above
            `MAX_NETWORK_PARAMETERS` (refused before it is built), or an observation size
            or action count that these rules do not give.
    """
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from skyjo_env.options import observation_box

    architecture = policy_architecture(metadata, path)
    rules = _metadata_rules(metadata, path)
    check_network_size(architecture, rules, path)
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
    temporary file, then a rename: a killed process, or a full disk, never leaves half a
    checkpoint, and the file it replaces stays as it was until the rename).

    Writes no pickled objects: ``skyjo_meta.json`` (``metadata`` with ``format`` set to
    ``skyjo-rl-ppo/3``, a ``policy`` entry, derived from ``metadata["config"]`` when
    absent, and an ``integrity`` entry: the sha256 of every other member and of the
    metadata itself), ``policy.pth`` and ``optimizer.pth`` (state_dicts of tensors), and
    each ``extra_members`` entry under its own name. What is written passes
    `validate_metadata`, so it loads back.

    Args:
        model: A MaskablePPO (anything with ``.policy`` and ``.policy.optimizer``).
        path: Destination; ``.zip`` is appended when missing.
        metadata: JSON-serialisable; see `checkpoint_metadata`.
        extra_members: Member name (a plain file name, `is_plain_name`) -> bytes (the
            trainer's resume state).

    Returns:
        The path written.

    Raises:
        CheckpointError: The metadata's network description does not match the model or
            is above `MAX_NETWORK_PARAMETERS`, the metadata would not load back, an extra
            member is not bytes, has no plain name or reuses a reserved name, a member is
            over `MAX_MEMBER_BYTES`, or the file cannot be written (``cannot write
            checkpoint 'PATH': No space left on device``).
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_name(path.name + ".zip")
    extra = dict(extra_members or {})
    for name, content in extra.items():
        if not is_plain_name(name) or name in RESERVED_MEMBERS:
            raise CheckpointError(
                f"{_where(path)}: extra member name {name!r} is not a plain file name or is "
                f"reserved ({', '.join(RESERVED_MEMBERS)})"
            )
        if not isinstance(content, (bytes, bytearray)):
            raise CheckpointError(
                f"{_where(path)}: extra member {name!r} must be bytes, got {type(content).__name__}"
            )
    meta = {key: value for key, value in metadata.items() if key != "integrity"}
    meta["format"] = CHECKPOINT_FORMAT
    if meta.get("policy") is None and meta.get("config") is None:
        meta["policy"] = describe_policy(model.policy)
    meta["policy"] = policy_architecture(meta, path)
    state = model.policy.state_dict()
    # refuse to write a checkpoint that would not load back into its own description
    _check_state(build_policy(meta, path, trainable=False).state_dict(), state, POLICY_MEMBER,
                 path, finite=False)
    members = {
        POLICY_MEMBER: _serialise(state),
        OPTIMIZER_MEMBER: _serialise(model.policy.optimizer.state_dict()),
        **{name: bytes(content) for name, content in extra.items()},
    }
    _write_checked(path, meta, members)
    return path


def _write_checked(path: Path, meta: dict[str, Any], members: Mapping[str, bytes]) -> None:
    """Write a checkpoint of ``meta`` (without ``integrity``) and ``members`` at ``path``,
    its integrity record computed here and the result validated as a loader would.

    Raises:
        CheckpointError: A member over its size limit, metadata that would not load back,
            or a failed write.
    """
    meta = json.loads(json.dumps(meta))  # what a reader sees, so that its digest matches
    meta["integrity"] = {
        "algorithm": INTEGRITY_ALGORITHM,
        "metadata": metadata_digest(meta),
        "members": {name: hashlib.sha256(content).hexdigest() for name, content in members.items()},
    }
    members = {META_MEMBER: json.dumps(meta, indent=2, sort_keys=True).encode(), **members}
    for name, content in members.items():
        if len(content) > _member_limit(name):
            raise CheckpointError(f"{_where(path)}: member {name!r} would be {len(content)} "
                                  f"bytes, more than the {_member_limit(name)} a loader reads")
    validate_metadata(parse_json_member(members[META_MEMBER], path, META_MEMBER), path)
    _write_archive(path, members)


def save_network_only(source: str | Path, path: str | Path) -> Path:
    """Copy checkpoint ``source`` to ``path`` with only its network: the metadata, weights
    and optimizer, without the trainer's resume state (a run's ``checkpoints/last.zip``
    shipped as a model). The weights are the same bytes; the integrity record is computed
    for the new file.

    Args:
        source: A ``skyjo-rl-ppo/3`` checkpoint (any checkpoint `read_metadata` accepts
            with an integrity record).
        path: Destination; ``.zip`` is appended when missing.

    Returns:
        The path written.

    Raises:
        CheckpointError: ``source`` is unreadable, damaged or has no integrity record, or
            ``path`` cannot be written.
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_name(path.name + ".zip")
    metadata = read_metadata(source)
    if "integrity" not in metadata:
        raise CheckpointError(f"{_where(source)}: an older format without an integrity "
                              "record; only skyjo-rl-ppo/3 checkpoints are copied")
    meta = {key: value for key, value in metadata.items() if key != "integrity"}
    members = {name: read_member(source, name, metadata)
               for name in (POLICY_MEMBER, OPTIMIZER_MEMBER)}
    _write_checked(path, meta, members)
    return path


def _write_archive(path: Path, members: Mapping[str, bytes]) -> None:
    """Write ``members`` as a zip at ``path`` atomically; an ``OSError`` (a full disk, no
    permission) becomes one line and leaves any previous file at ``path`` intact."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=".zip") as temporary:
            with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                for name, content in members.items():
                    archive.writestr(name, content)
    except OSError as error:
        reason = error.strerror or one_line(error, _CAUSE_LIMIT)
        raise CheckpointError(f"cannot write {_where(path)}: {reason}") from error


# ---------------------------------------------------------------------------- reading


def _member_limit(name: str) -> int:
    return MAX_METADATA_BYTES if name == META_MEMBER else MAX_MEMBER_BYTES


def _open_archive(path: str | Path) -> zipfile.ZipFile:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{_where(path)} does not exist")
    try:
        return zipfile.ZipFile(path)
    except ZIP_ERRORS as error:
        raise CheckpointError(f"{_where(path)} is corrupt: {one_line(error, _CAUSE_LIMIT)}") from error


def _archive_members(archive: zipfile.ZipFile, path: str | Path) -> dict[str, zipfile.ZipInfo]:
    """The members of an open checkpoint by name, checked before any is read: at most
    `MAX_MEMBERS`, each a plain file name (`is_plain_name`) present once, each within its
    size limit (`MAX_METADATA_BYTES` for the metadata, `MAX_MEMBER_BYTES` for the others),
    all within `MAX_ARCHIVE_BYTES`.

    Raises:
        CheckpointError: Naming the file and the member.
    """
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise CheckpointError(f"{_where(path)} has {len(infos)} members: at most {MAX_MEMBERS} "
                              "are read")
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename
        if not is_plain_name(name):
            raise CheckpointError(f"{_where(path)} has a member named {_describe(name)}: "
                                  "expected a plain file name")
        if name in members:
            raise CheckpointError(f"{_where(path)} holds member {name!r} twice")
        if info.file_size > _member_limit(name):
            raise CheckpointError(
                f"{_where(path)}: member {name!r} is {info.file_size} bytes, more than the "
                f"{_member_limit(name)} allowed"
            )
        members[name] = info
    total = sum(info.file_size for info in infos)
    if total > MAX_ARCHIVE_BYTES:
        raise CheckpointError(f"{_where(path)} holds {total} bytes, more than the "
                              f"{MAX_ARCHIVE_BYTES} allowed")
    return members


def _read_info(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str | Path) -> bytes:
    """A checked member's bytes (zipfile verifies its CRC)."""
    try:
        with archive.open(info) as handle:
            content = handle.read(info.file_size + 1)
    except ZIP_ERRORS as error:
        raise CheckpointError(
            f"{_where(path)}: member {info.filename!r} is corrupt: {one_line(error, _CAUSE_LIMIT)}"
        ) from error
    if len(content) != info.file_size:
        raise CheckpointError(f"{_where(path)}: member {info.filename!r} is corrupt: its size "
                              "does not match the archive's directory")
    return content


def _member_digest(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str | Path) -> str:
    """The sha256 of a checked member, read in pieces (zipfile verifies its CRC)."""
    digest = hashlib.sha256()
    try:
        with archive.open(info) as handle:
            while piece := handle.read(1 << 20):
                digest.update(piece)
    except ZIP_ERRORS as error:
        raise CheckpointError(
            f"{_where(path)}: member {info.filename!r} is corrupt: {one_line(error, _CAUSE_LIMIT)}"
        ) from error
    return digest.hexdigest()


def _verify_members(archive: zipfile.ZipFile, members: Mapping[str, zipfile.ZipInfo],
                    metadata: Mapping[str, Any], path: str | Path) -> None:
    """Read every member once: each one the ``integrity`` record names must be present
    with that sha256; the others (all of them in formats without checksums) must pass
    their CRC. A member not recorded is never read as data (`read_member` refuses it)."""
    recorded = metadata.get("integrity", {}).get("members", {})
    for name in recorded:
        if name not in members:
            raise CheckpointError(f"{_where(path)} has no member {name!r} (its metadata "
                                  "records one)")
    for name, info in members.items():
        if name == META_MEMBER:
            continue
        digest = _member_digest(archive, info, path)
        if name in recorded and digest != recorded[name]:
            raise CheckpointError(
                f"{_where(path)}: member {name!r} does not match the checksum in its metadata "
                "(damaged or changed after the checkpoint was saved)"
            )


def read_member(path: str | Path, name: str, metadata: Mapping[str, Any] | None = None) -> bytes:
    """The bytes of member ``name`` of a checkpoint.

    Args:
        path: The checkpoint.
        name: The member.
        metadata: Its metadata (`read_metadata`): when it has an ``integrity`` record, the
            member must be recorded there and match its sha256.

    Raises:
        CheckpointError: The file is missing or corrupt, the member is missing, damaged,
            over its size limit, or (with ``metadata``) not recorded or not matching.
    """
    with _open_archive(path) as archive:
        members = _archive_members(archive, path)
        if name not in members:
            raise CheckpointError(f"{_where(path)} has no member {name!r}")
        content = _read_info(archive, members[name], path)
    recorded = (metadata or {}).get("integrity", {}).get("members")
    if recorded is not None:
        if name not in recorded:
            raise CheckpointError(f"{_where(path)}: member {name!r} is not recorded in its "
                                  "metadata's checksums (added after the checkpoint was saved)")
        if hashlib.sha256(content).hexdigest() != recorded[name]:
            raise CheckpointError(
                f"{_where(path)}: member {name!r} does not match the checksum in its metadata "
                "(damaged or changed after the checkpoint was saved)"
            )
    return content


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata of a checkpoint (format ``skyjo-rl-ppo/3``, ``/2`` or ``/1``), after
    the one validation pass every loader goes through, before anything is built:

    1. the archive's directory: member count, plain names, sizes (`_archive_members`);
    2. the metadata: size, JSON nesting (`parse_json_member`), schema and network size
       (`validate_metadata`), and its own checksum;
    3. every member read once: its sha256 against the metadata's record (format ``/3``), or
       its CRC (older formats).

    Raises:
        CheckpointError: One line naming the file and the problem: missing, not a zip,
            damaged, a field of its metadata (named), a network above
            `MAX_NETWORK_PARAMETERS`, a member over its size limit or not matching its
            checksum.
    """
    with _open_archive(path) as archive:
        members = _archive_members(archive, path)
        if META_MEMBER not in members:
            # also what a truncated checkpoint looks like: zipfile then finds the
            # directory of a zip nested inside it
            raise CheckpointError(
                f"{_where(path)} is corrupt or not a skyjo-rl checkpoint (no {META_MEMBER} inside)"
            )
        content = _read_info(archive, members[META_MEMBER], path)
        metadata = validate_metadata(parse_json_member(content, path, META_MEMBER), path)
        _verify_members(archive, members, metadata, path)
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


def load_policy_weights(path: str | Path, policy, widen: bool = False,
                        metadata: dict[str, Any] | None = None) -> None:
    """Load a checkpoint's policy weights (actor, critic, features) into ``policy``, a
    MaskableActorCriticPolicy of the same architecture (with ``widen``, or a larger one:
    more input features, wider hidden layers; `widened_state`); its optimizer is left
    alone.

    The checkpoint goes through `read_metadata` (unless its ``metadata`` is given, read
    that way already); the tensors are read with ``weights_only=True``, verified against
    the metadata's checksum and checked against ``policy`` first, so on an error
    ``policy`` is unchanged.

    Raises:
        CheckpointError: Any problem with the file or its tensors, or tensors that do not
            fit ``policy``.
    """
    if metadata is None:
        metadata = read_metadata(path)
    state = _load_tensors(path, POLICY_MEMBER, metadata)
    if widen and isinstance(state, Mapping):
        state = widened_state(state, policy.state_dict())
    _check_state(policy.state_dict(), state, POLICY_MEMBER, path)
    policy.load_state_dict(state)


def _load_tensors(path: str | Path, name: str, metadata: Mapping[str, Any]):
    """``torch.load`` of a member with ``weights_only=True``: tensors and plain containers
    only, so the file's pickle stream can name no function to call. The member is verified
    against ``metadata``'s checksum first (`read_member`)."""
    import torch

    content = read_member(path, name, metadata)
    try:
        return torch.load(io.BytesIO(content), weights_only=True, map_location="cpu")
    except Exception as error:  # torch raises UnpicklingError, RuntimeError, EOFError, ...
        raise CheckpointError(
            f"{_where(path)}: member {name!r} is not a plain tensor file ({one_line(error, _CAUSE_LIMIT)})"
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
        if value.dtype != reference.dtype or value.layout != reference.layout:
            raise CheckpointError(
                f"{_where(path)}: {name!r} entry {key!r} is {value.dtype} ({value.layout}), "
                f"the network holds {reference.dtype} ({reference.layout})"
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
    load_policy_weights(path, policy, metadata=metadata)
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
    for s, g in zip(saved, groups, strict=True):
        _check_group_settings(s, g, name, path)
    parameters = {
        index: parameter
        for s, g in zip(saved, groups, strict=True)
        for index, parameter in zip(s["params"], g["params"], strict=True)
    }
    for index, entry in state["state"].items():
        if index not in parameters or not isinstance(entry, Mapping):
            raise CheckpointError(f"{_where(path)}: {name!r} has state for unknown parameter "
                                  f"{_describe(index)}")
        shape = parameters[index].shape
        for key, value in entry.items():
            if isinstance(value, torch.Tensor) and value.ndim > 0 and value.shape != shape:
                raise CheckpointError(
                    f"{_where(path)}: {name!r} state {key!r} of parameter {index} is "
                    f"{tuple(value.shape)}, the parameter is {tuple(shape)}"
                )
            if isinstance(value, torch.Tensor) and (
                    value.layout != torch.strided or not value.is_floating_point()
                    or not bool(torch.isfinite(value).all())):
                raise CheckpointError(f"{_where(path)}: {name!r} state {key!r} of parameter "
                                      f"{index} is not a finite float tensor")
            if isinstance(value, float) and not math.isfinite(value):
                raise CheckpointError(f"{_where(path)}: {name!r} state {key!r} is not finite")


def _check_group_settings(saved: Mapping[str, Any], group: Mapping[str, Any], name: str,
                          path: str | Path) -> None:
    """Raise unless a saved parameter group's settings (``lr``, ``betas``, ``eps``, ...)
    are those of the model's optimizer, each of the same kind (a finite number, a bool, a
    pair of numbers, None): ``load_state_dict`` takes any value, and a string there would
    fail only at the next update, mid-training."""
    def kind(value: Any) -> str:
        if value is None or isinstance(value, bool):
            return type(value).__name__
        if isinstance(value, (int, float)):
            return "number" if math.isfinite(value) else "non-finite"
        if isinstance(value, (list, tuple)) and all(kind(v) == "number" for v in value):
            return f"{len(value)} numbers"
        return type(value).__name__

    for key, reference in group.items():
        if key == "params":
            continue
        if key not in saved or kind(saved[key]) != kind(reference):
            raise CheckpointError(
                f"{_where(path)}: {name!r} parameter group setting {key!r} is "
                f"{_describe(saved.get(key, '(missing)'))}, the model's optimizer has "
                f"{kind(reference)}"
            )


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
    policy_state = _load_tensors(path, POLICY_MEMBER, metadata)
    _check_state(model.policy.state_dict(), policy_state, POLICY_MEMBER, path)
    optimizer_state = _load_tensors(path, optimizer_member, metadata)
    _check_optimizer_state(model.policy.optimizer, optimizer_state, optimizer_member, path)
    previous = {key: value.clone() for key, value in model.policy.state_dict().items()}
    model.policy.load_state_dict(policy_state)
    try:
        model.policy.optimizer.load_state_dict(optimizer_state)
    except (ValueError, KeyError, TypeError, RuntimeError) as error:
        model.policy.load_state_dict(previous)  # leave the model as it was
        raise CheckpointError(
            f"{_where(path)}: {optimizer_member!r} does not fit the model's optimizer "
            f"({one_line(error, _CAUSE_LIMIT)})"
        ) from error

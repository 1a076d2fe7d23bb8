"""Reading a user's YAML file (a rules file, a training config, a sweep space) so that no
file can cost more than its size: `load_yaml_file`.

PyYAML's ``safe_load`` builds only plain data, but it still expands anchors and aliases:
a 399-byte file of nested aliases ("billion laughs") expands to gigabytes, and an error
message that repeats such a value is megabytes long. The `UserYamlLoader` here:

* refuses anchors and aliases (``&name``, ``*name``): no config of ours needs them, and
  a bound on their expansion would still let a small file build a large value;
* refuses nesting deeper than `MAX_YAML_DEPTH` (the composer recurses per level);
* reads dates as the strings they are written as and refuses the tags of values that are
  not plain data (``!!set``, ``!!timestamp``, ``!!binary``, ``!!omap``, ``!!pairs``), so
  what it returns is JSON-like: mappings, lists, strings, numbers, booleans and nulls;
* refuses files above `MAX_YAML_BYTES` before parsing them.

Every refusal is a `YamlFileError`, one line naming the file (its path shortened) and,
for a parse error, the line and column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from skyjo_env.core.errors import shorten

#: The largest YAML file read: our configs are a few KB; a bound keeps a huge or endless
#: file (``/dev/zero``) from being read whole.
MAX_YAML_BYTES = 1 << 20
#: The deepest nesting of mappings and lists (ours nest 3 levels).
MAX_YAML_DEPTH = 64
#: The longest file path repeated in a message.
PATH_CHARS = 120

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
#: Tags SafeLoader builds into values that are not plain (JSON-like) data.
_REFUSED_TAGS = ("set", "timestamp", "binary", "omap", "pairs")


class YamlFileError(ValueError):
    """A YAML file that cannot be read, is too large, is not valid YAML or uses what
    `UserYamlLoader` refuses: one line."""

    def __init__(self, message: str):
        super().__init__(shorten(str(message), 400))  # one line, and never a flood


class UserYamlLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` without anchors, aliases, deep nesting, dates or non-plain tags
    (see the module docstring); refusals are `yaml.MarkedYAMLError` with the position."""

    def __init__(self, stream: Any):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose one node, refusing anchors, aliases and nesting past `MAX_YAML_DEPTH`."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases (&name, *name) are not allowed; write the "
                "value out", event.start_mark)
        if self._depth >= MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nesting deeper than {MAX_YAML_DEPTH} levels is not allowed",
                event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


# dates stay the strings they are written as (a config value is never a date)
UserYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _refuse_tag(loader: UserYamlLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag.rsplit(':', 1)[-1]!r} is not allowed (only plain "
        "mappings, lists, strings, numbers, booleans and null)", node.start_mark)


for _name in _REFUSED_TAGS:
    UserYamlLoader.add_constructor(f"tag:yaml.org,2002:{_name}", _refuse_tag)


def show_path(path: str | Path) -> str:
    """``repr`` of a file path for a message, cut to `PATH_CHARS` characters."""
    return repr(shorten(str(path), PATH_CHARS))


def parse_yaml(text: str) -> Any:
    """The plain data of YAML ``text`` (`UserYamlLoader`; an empty text gives None).

    Raises:
        yaml.YAMLError: Not valid YAML, or what `UserYamlLoader` refuses.
    """
    loader = UserYamlLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml_file(path: str | Path, what: str) -> Any:
    """The plain data of the YAML file ``path`` (None for an empty file).

    Args:
        path: The file.
        what: What it holds, for messages (``"rules file"``).

    Raises:
        YamlFileError: The file is missing, unreadable, not UTF-8, larger than
            `MAX_YAML_BYTES`, not valid YAML, or uses what `UserYamlLoader` refuses (the
            message gives the line and column).
    """
    path = Path(path)
    where = f"{what} {show_path(path)}"
    if not path.is_file():
        problem = "is a directory, not a YAML file" if path.is_dir() else "does not exist"
        raise YamlFileError(f"{where} {problem}")
    try:
        # a regular file (is_file): its size is known before it is read
        if path.stat().st_size > MAX_YAML_BYTES:
            raise YamlFileError(f"{where} is larger than {MAX_YAML_BYTES // 1024} KiB: not a "
                                "config file")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise YamlFileError(f"{where} cannot be read: {error}") from None
    try:
        return parse_yaml(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise YamlFileError(f"{where} is not valid YAML: {error.problem}{at}") from None
    except yaml.YAMLError as error:
        raise YamlFileError(f"{where} is not valid YAML: {error}") from None


__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "UserYamlLoader", "YamlFileError",
           "load_yaml_file", "parse_yaml", "show_path"]

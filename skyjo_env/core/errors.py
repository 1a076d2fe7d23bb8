"""One-line error text: the one way skyjo-rl folds an exception into a message.

An error raised inside an env, a worker or a training run is often reported inside
another message (an opponent that raised, a Ray task that failed, a trial of a sweep).
`one_line` gives that report one shape everywhere: ``Type: first line of the message``,
whitespace folded, at most `ONE_LINE_LIMIT` characters, so that a traceback or a huge
value repeated in a message never floods a log line. It lives in the rules
engine's package, the lowest layer that needs it (`skyjo_env.core.safe_yaml`); everything
above reuses it.
"""

from __future__ import annotations

#: The most characters `one_line` and `shorten` keep (the cut ones end with ``...``).
ONE_LINE_LIMIT = 200

_ELLIPSIS = "..."


def shorten(text: str, limit: int = ONE_LINE_LIMIT) -> str:
    """``text`` with every whitespace run (newlines included) folded to one space, cut to
    at most ``limit`` characters (then ending with ``...``).

    Raises:
        ValueError: ``limit`` is smaller than the ellipsis.
    """
    if limit < len(_ELLIPSIS):
        raise ValueError(f"limit={limit!r} is invalid: allowed an int >= {len(_ELLIPSIS)}")
    folded = " ".join(text.split())
    if len(folded) <= limit:
        return folded
    return folded[: limit - len(_ELLIPSIS)] + _ELLIPSIS


def first_line(text: str) -> str:
    """The first line of ``text`` that is not blank, stripped ("" when all are blank)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def one_line(error: BaseException, limit: int = ONE_LINE_LIMIT) -> str:
    """``Type: first line of the message`` of ``error``, at most ``limit`` characters.

    Only the first non-blank line is kept (a Ray error's traceback, a long explanation
    after it, are dropped); an exception without a message gives its type name alone.

    Examples:
        ``one_line(ValueError("bad\\n  details"))`` is ``"ValueError: bad"``.
    """
    message = first_line(str(error))
    name = type(error).__name__
    return shorten(f"{name}: {message}" if message else name, limit)


__all__ = ["ONE_LINE_LIMIT", "first_line", "one_line", "shorten"]

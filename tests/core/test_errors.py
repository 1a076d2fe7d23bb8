"""`one_line`: the one way an exception becomes part of a message."""

from __future__ import annotations

import pytest

from skyjo_env.core.errors import ONE_LINE_LIMIT, first_line, one_line, shorten


def test_one_line__type_and_first_line_of_the_message():
    assert one_line(ValueError("bad value\n  Traceback (most recent call last):")) == (
        "ValueError: bad value"
    )
    assert one_line(KeyError("key")) == "KeyError: 'key'"
    assert one_line(RuntimeError("\n\n  late start  \nmore")) == "RuntimeError: late start"


def test_one_line__exception_without_a_message_is_its_type():
    assert one_line(RuntimeError()) == "RuntimeError"
    assert one_line(RuntimeError("   \n ")) == "RuntimeError"


def test_one_line__long_message_is_cut_to_the_limit():
    text = one_line(ValueError("x" * 1000))
    assert len(text) == ONE_LINE_LIMIT and text.endswith("...")
    assert text.startswith("ValueError: xxx")
    assert one_line(ValueError("y" * 50), limit=20) == "ValueError: yyyyy..."


def test_shorten__folds_whitespace_and_refuses_a_limit_below_the_ellipsis():
    assert shorten("a \t b\n\nc") == "a b c"
    assert shorten("abcdef", 5) == "ab..."
    with pytest.raises(ValueError, match="limit=2 is invalid"):
        shorten("abc", 2)


def test_first_line__blank_text_gives_empty():
    assert first_line("") == "" and first_line("\n \n") == ""
    assert first_line(" one \ntwo") == "one"

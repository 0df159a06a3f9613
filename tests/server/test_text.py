"""LSP positions and edits from jaxmem's positions and fixed text."""

from __future__ import annotations

import pytest

from jaxmem.server.text import LineIndex, Position, split_lines, text_edits

from .lsp_client import apply_edits

ASTRAL = 'x = "é😀"; y = f(x)\n'  # f starts at character 14


@pytest.mark.parametrize("encoding, character", [("utf-16", 15), ("utf-8", 18), ("utf-32", 14)])
def test_columns_count_the_agreed_code_units(encoding, character):
    index = LineIndex("import jax\n" + ASTRAL, encoding)
    assert ASTRAL[14] == "f"
    assert index.position(2, 14) == Position(1, character)


def test_an_unknown_encoding_is_refused():
    with pytest.raises(ValueError, match="utf-16"):
        LineIndex("", "latin-1")


@pytest.mark.parametrize("text, lines", [
    ("a\r\nb\rc\nd", ["a\r\n", "b\r", "c\n", "d"]),
    ("a\x0cb\u2028c\n", ["a\x0cb\u2028c\n"]),  # not line ends in Python or LSP
    ("", []),
    ("\n\n", ["\n", "\n"]),
])
def test_lines_end_where_python_and_lsp_end_them(text, lines):
    assert split_lines(text) == lines


def test_positions_past_the_text_are_clamped():
    index = LineIndex("ab\ncd")
    assert index.position(2, 99) == Position(1, 2)
    assert index.position(9, 0) == Position(1, 2)
    assert index.position(0, 5) == Position(0, 0)
    assert LineIndex("ab\n").position(2, 0) == Position(1, 0)


@pytest.mark.parametrize("before, after", [
    ("@jax.jit\ndef f(x):\n    return x\n", "@jax.jit(donate_argnums=0)\ndef f(x):\n    return x\n"),
    ("import jax\n\n@jax.jit\ndef f(x): ...\n",
     "import jax\nfrom functools import partial\n\n@partial(jax.jit, donate_argnums=(0,))\ndef f(x): ...\n"),
    ('s = "😀"\r\n@jax.jit\r\ndef f(x): ...\r\n', 's = "😀"\r\n@jax.jit(donate_argnums=0)\r\ndef f(x): ...\r\n'),
    ("a\r\nb\r\n", "a\nb\r\n"),
    ("a\nb", "a\nb\n"),
    ("a\n", ""),
    ("", "a\n"),
    ("x = 1\n", "x = 1\n"),
])
def test_edits_turn_the_text_into_the_fixed_text(before, after):
    edits = [{"range": {"start": vars(e.start), "end": vars(e.end)}, "newText": e.new_text}
             for e in text_edits(before, after)]
    assert apply_edits(before, edits) == after
    assert (edits == []) == (before == after)


def test_edits_are_small():
    before = "import jax\n" + "x = 1\n" * 50 + "@jax.jit\ndef f(x): ...\n"
    after = before.replace("@jax.jit\n", "@jax.jit(donate_argnums=0)\n")
    (edit,) = text_edits(before, after)
    assert (edit.start, edit.end, edit.new_text) == (Position(51, 8), Position(51, 8), "(donate_argnums=0)")


def test_no_edit_splits_a_crlf():
    (edit,) = text_edits("a\r\nb", "a\nb")
    assert (edit.start, edit.end, edit.new_text) == (Position(0, 1), Position(1, 0), "\n")

"""Positions and edits in LSP terms: 0-based lines, columns in code units.

jaxmem counts columns in characters (code points, as libcst does); LSP
counts UTF-16 code units unless client and server agreed on another
``positionEncoding``: in UTF-16 a character beyond U+FFFF (an emoji) is
two units, in UTF-8 a non-ASCII character is two to four.  Lines end at
``\\n``, ``\\r\\n`` or ``\\r`` in both (not at the other characters
``str.splitlines`` breaks on, such as a form feed).
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their line ends, as Python and LSP count them."""
    return _LINE.findall(text)


UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def utf16_length(text: str) -> int:
    """The length of ``text`` in UTF-16 code units."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


_LENGTHS = {UTF8: _utf8_length, UTF16: utf16_length, UTF32: len}


@dataclass(frozen=True)
class Position:
    """An LSP position: 0-based ``line``, ``character`` in code units."""

    line: int
    character: int


@dataclass(frozen=True)
class TextEdit:
    """Replace ``start``..``end`` with ``new_text``."""

    start: Position
    end: Position
    new_text: str


class LineIndex:
    """Converts jaxmem's positions and string offsets in one text to LSP positions.

    ``encoding`` is the agreed position encoding: ``utf-16`` (LSP's
    default), ``utf-8`` or ``utf-32``.
    """

    def __init__(self, text: str, encoding: str = UTF16):
        if encoding not in _LENGTHS:
            raise ValueError(f"unknown position encoding {encoding!r}; use one of {', '.join(_LENGTHS)}")
        self.length = _LENGTHS[encoding]
        self.lines = split_lines(text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def position(self, line: int, col: int) -> Position:
        """The LSP position of jaxmem's 1-based ``line`` and 0-based character ``col``.

        Out-of-range values are clamped to the text (a finding on the line
        after the last one lands at the end).
        """
        index = line - 1
        if index < 0:
            return Position(0, 0)
        if index >= len(self.lines):
            return self._end()
        content = self.lines[index].rstrip("\r\n")
        return Position(index, self.length(content[:max(col, 0)]))

    def offset_position(self, offset: int) -> Position:
        """The LSP position of the string offset ``offset``."""
        index = bisect.bisect_right(self.starts, offset) - 1
        if index >= len(self.lines):
            return self._end()
        return Position(index, self.length(self.lines[index][:offset - self.starts[index]]))

    def _end(self) -> Position:
        if not self.lines:
            return Position(0, 0)
        last = self.lines[-1]
        if last.endswith(("\n", "\r")):
            return Position(len(self.lines), 0)
        return Position(len(self.lines) - 1, self.length(last))


def text_edits(before: str, after: str, encoding: str = UTF16) -> list[TextEdit]:
    """Edits that turn ``before`` into ``after``: one per changed run of lines,
    each trimmed to the characters that differ."""
    if before == after:
        return []
    old, new = split_lines(before), split_lines(after)
    index = LineIndex(before, encoding)
    edits = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = index.starts[i1], index.starts[i2]
        old_text, new_text = "".join(old[i1:i2]), "".join(new[j1:j2])
        prefix = _common_prefix(old_text, new_text)
        suffix = _common_prefix(old_text[prefix:][::-1], new_text[prefix:][::-1])
        # LSP has no position between the two characters of a \r\n.
        prefix -= _splits_crlf(before, start + prefix)
        suffix -= _splits_crlf(before, end - suffix)
        edits.append(TextEdit(index.offset_position(start + prefix),
                              index.offset_position(end - suffix),
                              new_text[prefix:len(new_text) - suffix]))
    return edits


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    size = 0
    while size < limit and a[size] == b[size]:
        size += 1
    return size


def _splits_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"

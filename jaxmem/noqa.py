"""``# noqa`` comments: ``# noqa`` silences every finding on its line,
``# noqa: JXM001,JXM101`` only those codes (a code prefix such as ``JXM1``
works too, as in flake8).  A finding is silenced by a comment on its first
line: for JXM001-JXM003 that is the jitted definition's line (the decorator
or the ``name = jax.jit(...)`` assignment), for JXM101 the line of the read.
A comment on a decorated ``def`` line also counts for its decorators' lines.

Used by ``jaxmem check``; the flake8 plugin relies on flake8's own noqa.
"""

from __future__ import annotations

import re

from jaxmem.findings import Finding

# flake8's inline pattern: "# noqa", optionally ":" and a list of codes.
NOQA_COMMENT = re.compile(
    r"#\s*noqa"
    r"(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

# line number -> codes silenced there, or None for a blanket "# noqa".
NoqaMap = dict[int, "frozenset[str] | None"]


def parse_noqa(text: str) -> NoqaMap:
    """The ``# noqa`` comments of ``text``, by 1-based line number."""
    if "noqa" not in text.lower():
        return {}
    found: NoqaMap = {}
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if "noqa" not in line.lower():
            continue
        match = NOQA_COMMENT.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        silenced = None if codes is None else frozenset(c.upper() for c in CODE.findall(codes))
        _add(found, number, silenced)
        if _DEF_LINE.match(line):
            # JXM001/JXM002 are reported at the first decorator: a comment on
            # the ``def`` line, where a user writes it, silences them too.
            for decorator in _decorator_lines(lines, number):
                _add(found, decorator, silenced)
    return found


_DEF_LINE = re.compile(r"^\s*(async\s+)?def\b")


def _add(found: NoqaMap, number: int, codes) -> None:
    """Merge ``codes`` into the comment of line ``number`` (a blanket ``# noqa`` wins)."""
    if codes is None or (number in found and found[number] is None):
        found[number] = None
    else:
        found[number] = codes | found.get(number, frozenset())


def _decorator_lines(lines: list[str], def_line: int) -> list[int]:
    """The 1-based lines starting the decorators of the ``def`` on ``def_line``."""
    indent = len(lines[def_line - 1]) - len(lines[def_line - 1].lstrip())
    starts = []
    for number in range(def_line - 1, 0, -1):
        line = lines[number - 1]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        own_indent = len(line) - len(line.lstrip())
        if own_indent == indent and stripped.startswith("@"):
            starts.append(number)
        elif own_indent > indent or (own_indent == indent and stripped[0] in ")]}"):
            continue  # inside a decorator spread over lines
        else:
            break
    return starts


def is_suppressed(finding: Finding, noqa: NoqaMap) -> bool:
    """Whether a ``# noqa`` comment on the finding's line silences it."""
    if finding.span.line not in noqa:
        return False
    codes = noqa[finding.span.line]
    return codes is None or finding.code.startswith(tuple(codes))

"""``# noqa`` comments: ``# noqa`` silences every finding on its line,
``# noqa: JXM001,JXM101`` only those codes (a code prefix such as ``JXM1``
works too, as in flake8).  A finding is silenced by a comment on its first
line: for JXM001/JXM002 that is the jitted definition's line (the decorator
or the ``name = jax.jit(...)`` assignment), for JXM101 the line of the read.

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
    for number, line in enumerate(text.splitlines(), start=1):
        if "noqa" not in line.lower():
            continue
        match = NOQA_COMMENT.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        found[number] = (
            None if codes is None else frozenset(c.upper() for c in CODE.findall(codes))
        )
    return found


def is_suppressed(finding: Finding, noqa: NoqaMap) -> bool:
    """Whether a ``# noqa`` comment on the finding's line silences it."""
    if finding.span.line not in noqa:
        return False
    codes = noqa[finding.span.line]
    return codes is None or finding.code.startswith(tuple(codes))

"""Expected findings written into test sources as ``# JXMnnn`` comments."""

from __future__ import annotations

import re

MARKER = re.compile(r"#.*?\b(JXM\d{3})\b")


def expected(source: str) -> set[tuple[int, str]]:
    """``(line, code)`` for every marker comment in ``source``."""
    out = set()
    for number, line in enumerate(source.splitlines(), start=1):
        if "#" not in line:
            continue
        comment = line[line.index("#"):]
        for code in re.findall(r"\b(JXM\d{3})\b", comment):
            out.add((number, code))
    return out

"""``# noqa`` comments as ``jaxmem check`` reads them."""

from __future__ import annotations

import pytest

from jaxmem.findings import Confidence, Finding, Severity, Span
from jaxmem.noqa import is_suppressed, parse_noqa


def finding(code: str, line: int) -> Finding:
    return Finding(code, "a.py", Span(line, 0, line, 1), "m", Severity.ERROR, Confidence.HIGH)


SOURCE = """\
@jax.jit  # noqa: JXM001
def f(x):  # NOQA
    y = g(x)  # noqa:JXM101,JXM105
    z = 1  # noqa: JXM1 some words after
    s = "no noqa here"
    t = 2  # noqa : JXM001
"""


def test_parse_noqa_maps_lines_to_codes():
    assert parse_noqa(SOURCE) == {
        1: frozenset({"JXM001"}),
        2: None,
        3: frozenset({"JXM101", "JXM105"}),
        4: frozenset({"JXM1"}),
        6: None,  # as in flake8, a malformed code list is a blanket noqa
    }


def test_text_without_noqa_is_an_empty_map():
    assert parse_noqa("x = 1\n") == {}


@pytest.mark.parametrize(
    ("code", "line", "suppressed"),
    [
        ("JXM001", 1, True),
        ("JXM101", 1, False),
        ("JXM101", 2, True),
        ("JXM105", 3, True),
        ("JXM104", 3, False),
        ("JXM104", 4, True),  # prefix JXM1
        ("JXM001", 4, False),
        ("JXM001", 5, False),
    ],
)
def test_is_suppressed(code, line, suppressed):
    assert is_suppressed(finding(code, line), parse_noqa(SOURCE)) is suppressed


def test_crlf_lines_count_the_same():
    assert parse_noqa("x = 1\r\ny = 2  # noqa\r\n") == {2: None}

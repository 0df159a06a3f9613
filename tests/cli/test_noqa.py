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
        1: None,  # the blanket noqa of the def line below counts for its decorator
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
        ("JXM101", 1, True),  # from the def line
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


DECORATED = """\
class Model:
    @partial(
        jax.jit,
        static_argnums=1,
    )
    @other  # noqa: JXM002
    def f(self, x):  # noqa: JXM001
        return x
"""


def test_a_noqa_on_the_def_line_counts_for_every_decorator_line():
    noqa = parse_noqa(DECORATED)
    assert noqa == {2: frozenset({"JXM001"}), 6: frozenset({"JXM001", "JXM002"}), 7: frozenset({"JXM001"})}
    assert is_suppressed(finding("JXM001", 2), noqa)
    assert not is_suppressed(finding("JXM002", 2), noqa)


def test_check_honours_noqa_on_the_def_line(tmp_path):
    from .conftest import MISSED_DONATION, MISSED_DONATION_LINE, run_tool, write

    lines = MISSED_DONATION.splitlines(keepends=True)
    assert lines[MISSED_DONATION_LINE].startswith("def step")
    lines[MISSED_DONATION_LINE] = lines[MISSED_DONATION_LINE].rstrip("\n") + "  # noqa: JXM001\n"
    write(tmp_path, "train.py", "".join(lines))
    quiet = run_tool("jaxmem", "check", "--no-cache", "train.py", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stdout
    write(tmp_path, "train.py", "".join(lines).replace("JXM001", "JXM101"))
    loud = run_tool("jaxmem", "check", "--no-cache", "train.py", cwd=tmp_path)
    assert loud.returncode == 1 and "JXM001" in loud.stdout

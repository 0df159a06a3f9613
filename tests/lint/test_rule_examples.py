"""Every rule's documented examples, run as tests.

INVALID examples must produce exactly the marked lines for their rule's
code; VALID ones none.  Runnable examples are also executed under real
JAX: crash examples must raise the documented error, and a JXM001
example's fixed text must run with its donated inputs really deleted and
print what the original printed.
"""

import pytest
from jaxprobe import run_plain, run_probed

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, report
from jaxmem.lint.rules import RULES, STATIC_CODES
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)


def _cases(kind):
    for code, rule in RULES.items():
        for i, example in enumerate(getattr(rule, kind)):
            yield pytest.param(code, example, id=f"{code}-{kind}-{i}")


def _findings(source):
    return report([facts_for_file("example.py", source, ALL)], ALL)[0].findings


def test_every_static_rule_has_examples():
    for code in STATIC_CODES:
        assert RULES[code].invalid, f"{code} has no INVALID example"


def test_every_rule_doc_has_the_standard_headings():
    for rule in RULES.values():
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
            assert heading in rule.documentation, f"{rule.code} lacks {heading!r}"


@pytest.mark.parametrize("code,example", list(_cases("invalid")))
def test_invalid_example_is_reported(code, example):
    findings = [f for f in _findings(example.code) if f.code == code]
    assert sorted({f.span.line for f in findings}) == example.expected_lines(code)
    if example.confidence is not None:
        assert {f.confidence for f in findings} == {example.confidence}


@pytest.mark.parametrize("code,example", list(_cases("valid")))
def test_valid_example_is_not_reported(code, example):
    assert [f for f in _findings(example.code) if f.code == code] == []


RUNNABLE_CRASHES = [
    pytest.param(code, ex, id=f"{code}-{i}")
    for code, rule in RULES.items()
    for i, ex in enumerate(rule.invalid)
    if ex.runnable and ex.raises
]


# jax 0.10.2 words one crash two ways: Python's dispatch checks the array first
# ("Array has been deleted"); its C++ fast path, taken once the computation is
# cached (an earlier test may have compiled ``old.sum()`` for that shape), lets
# the runtime refuse the buffer ("Buffer has been deleted or donated").
_SPELLINGS = {"Array has been deleted": "Array has been deleted|Buffer has been deleted or donated"}


@pytest.mark.parametrize("code,example", RUNNABLE_CRASHES)
def test_crash_example_really_crashes(code, example):
    with pytest.raises(Exception, match=_SPELLINGS.get(example.raises, example.raises)):
        run_plain(example.code)


RUNNABLE_FIXES = [
    pytest.param(code, ex, id=f"{code}-{i}")
    for code, rule in RULES.items()
    for i, ex in enumerate(rule.invalid)
    if ex.runnable and ex.fixed is not None
]


@pytest.mark.parametrize("code,example", RUNNABLE_FIXES)
def test_fixed_example_runs_with_inputs_donated(code, example):
    original = run_plain(example.code)
    fixed = run_probed(example.fixed_code)
    assert fixed.donating_calls, "the fixed code never called a donating function"
    assert all(all(call.deleted) for call in fixed.donating_calls)
    assert fixed.stdout == original.stdout
    # The fix is exactly the donation the finding proposed.
    proposed = {f.fix.index for f in _findings(example.code) if f.code == "JXM001" and f.confidence is Confidence.HIGH}
    donated_names = {name for call in fixed.donating_calls for name in call.donated}
    assert len(donated_names) == len(proposed)


def test_fixed_examples_are_clean():
    for code, example in [(p.values[0], p.values[1]) for p in RUNNABLE_FIXES]:
        assert [f for f in _findings(example.fixed_code) if f.code == "JXM001"] == []

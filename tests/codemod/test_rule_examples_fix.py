"""The fixed text in each rule's documentation is exactly what jaxmem-fix
writes for that example's high-confidence findings."""

import pytest

from jaxmem.codemod.edits import add_donations
from jaxmem.findings import Confidence
from jaxmem.lint.engine import analyze_source
from jaxmem.lint.rules import RULES

FIXED = [
    pytest.param(example, id=f"{code}-{i}")
    for code, rule in RULES.items()
    for i, example in enumerate(rule.invalid)
    if example.fixed is not None
]


@pytest.mark.parametrize("example", FIXED)
def test_documented_fix_is_what_the_codemod_writes(example):
    report = analyze_source(example.code, "example.py", partial_view=False)
    fixes = [f.fix for f in report.findings if f.fix is not None and f.confidence is Confidence.HIGH]
    assert fixes
    assert add_donations(example.code, fixes).source == example.fixed_code

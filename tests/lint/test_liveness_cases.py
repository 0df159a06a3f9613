"""Eval files (flake8-bugbear style): each case file marks the lines that
must be reported with ``# JXMnnn`` comments; its first line lists the codes
the file checks.  The analysis must report exactly those."""

from pathlib import Path

import pytest
from markers import expected

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, report
from jaxmem.settings import Settings

CASES = sorted((Path(__file__).parent / "cases").glob("*.py"))
ALL = Settings(min_confidence=Confidence.LOW)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_file(path):
    source = path.read_text()
    checked = {c.strip() for c in source.splitlines()[0].split(":", 1)[1].split(",")}
    findings = report([facts_for_file(str(path), source, ALL)], ALL)[0].findings
    got = {(f.span.line, f.code) for f in findings if f.code in checked}
    want = {(line, code) for line, code in expected(source) if code in checked and line > 1}
    assert sorted(got) == sorted(want), "\n".join(
        f"{line}: {code} {source.splitlines()[line - 1].strip()}" for line, code in sorted(got ^ want)
    )

"""The textual shortcuts (pre-filter, blanking) never change a finding.

Every source the test suite carries (rule examples, liveness eval files,
the example program) is analysed with the shortcuts on and off
(``JAXMEM_NO_SHORTCUTS=1``); the findings must be identical.  The
accuracy benchmark runs the same comparison on real projects.
"""

import pathlib

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.lint.rules import RULES
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _sources():
    for code, rule in RULES.items():
        for kind in ("valid", "invalid"):
            for i, example in enumerate(getattr(rule, kind)):
                yield pytest.param(example.code, id=f"{code}-{kind}-{i}")
    for path in sorted((ROOT / "tests" / "lint" / "cases").glob("*.py")) + [ROOT / "examples" / "train.py"]:
        yield pytest.param(path.read_text(), id=path.name)


def _findings(source: str) -> list[tuple]:
    hints = project_hints({"m.py": source})
    facts = facts_for_file("m.py", source, ALL, hints)
    return sorted((f.code, f.span.line, f.span.col, f.message, f.confidence.value)
                  for f in report([facts], ALL)[0].findings)


@pytest.mark.parametrize("source", list(_sources()))
def test_findings_are_the_same_without_shortcuts(source, monkeypatch):
    fast = _findings(source)
    monkeypatch.setenv("JAXMEM_NO_SHORTCUTS", "1")
    assert _findings(source) == fast

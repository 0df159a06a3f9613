"""The rule base: one rule = one module holding its code, doc and examples.

A rule's examples are the single source for its tests and its rendered
documentation (``jaxmem rule CODE``), so the two cannot drift apart.  An
INVALID example marks every line that must be reported with a trailing
``# JXMnnn`` comment (flake8-bugbear's eval-file trick); a VALID example
must produce no finding of the rule's code.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from jaxmem.findings import Confidence, Severity

DOC_HEADINGS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
)


@dataclass(frozen=True)
class Example:
    """A code sample that must (INVALID) or must not (VALID) trigger a rule.

    ``runnable`` examples are executed under real JAX by the test suite:
    an INVALID example of a crash rule must raise "Array has been deleted";
    a ``fixed`` example must run with its donated inputs deleted.
    ``confidence`` pins the confidence the finding must carry.
    """

    source: str
    runnable: bool = False
    fixed: str | None = None
    confidence: Confidence | None = None
    note: str = ""
    raises: str | None = None  # text of the run-time error a runnable INVALID example raises

    @property
    def code(self) -> str:
        return textwrap.dedent(self.source).lstrip("\n")

    @property
    def fixed_code(self) -> str | None:
        return None if self.fixed is None else textwrap.dedent(self.fixed).lstrip("\n")

    def expected_lines(self, code: str) -> list[int]:
        """Lines carrying a ``# CODE`` marker for ``code``."""
        pattern = re.compile(r"#.*\b" + re.escape(code) + r"\b")
        return [
            number
            for number, line in enumerate(self.code.splitlines(), start=1)
            if pattern.search(line)
        ]


@dataclass(frozen=True)
class Rule:
    """Metadata of one JXM rule.  The analysis that emits it lives in
    :mod:`jaxmem.lint.join.checks`; this object is what users and docs see."""

    code: str
    name: str
    severity: Severity
    summary: str
    doc: str
    valid: tuple[Example, ...] = field(default_factory=tuple)
    invalid: tuple[Example, ...] = field(default_factory=tuple)
    fixable: bool = False

    @property
    def documentation(self) -> str:
        return textwrap.dedent(self.doc).strip()

    def render(self) -> str:
        """The rule's full documentation as Markdown, examples included."""
        parts = [f"# {self.name} ({self.code})", "", f"Severity: {self.severity.value}."]
        parts += ["", self.documentation, ""]
        if self.invalid:
            parts.append("## Examples that trigger it")
            for ex in self.invalid:
                parts += ["", "```python", ex.code.rstrip(), "```"]
        if self.valid:
            parts += ["", "## Examples that do not"]
            for ex in self.valid:
                parts += ["", "```python", ex.code.rstrip(), "```"]
        return "\n".join(parts).rstrip() + "\n"

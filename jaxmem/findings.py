"""Plain data shared by every stage: findings, positions, confidence.

Positions are stored the way libcst counts them: ``line`` 1-based and
``col`` 0-based in characters.  Every output format converts from here
(see :mod:`jaxmem.outputs`), so there is exactly one place that knows the
difference between flake8's, JSON's and SARIF's conventions.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Confidence(str, enum.Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 0, "medium": 1, "high": 2}[self.value]

    @classmethod
    def lowest(cls, values) -> "Confidence":
        return min(values, key=lambda c: c.rank, default=cls.HIGH)


@dataclass(frozen=True)
class Span:
    """A source range: 1-based lines, 0-based character columns."""

    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Evidence:
    """One fact behind a finding, e.g. a call site or the line of a read."""

    message: str
    path: str
    line: int
    cell: int | None = None  # the notebook cell ``line`` is in (then a line of that cell)


@dataclass(frozen=True)
class DonationFix:
    """What ``jaxmem-fix`` must add to the definition at ``definition_line``.

    ``index`` is the position ``donate_argnums`` would use on that
    definition; ``name`` the parameter's name (for ``donate_argnames``);
    ``mode`` the ``donate=`` value for equinox, which has no per-argument donation.
    """

    definition_line: int
    index: int | None
    name: str | None
    mode: str | None = None  # equinox: the ``donate=`` mode that donates it (and the others it covers)


@dataclass(frozen=True)
class Finding:
    """One reported problem or missed opportunity.

    In a notebook, ``cell`` is the 1-based cell number and ``span`` and
    ``definition_line`` count lines within that cell (``definition_cell``) (``fix`` keeps the
    line of the joined code, which ``jaxmem-fix`` edits).
    """

    code: str
    path: str
    span: Span
    message: str
    severity: Severity
    confidence: Confidence
    function: str | None = None
    wrapped: str | None = None
    definition_path: str | None = None
    definition_line: int | None = None
    parameter_index: int | None = None
    parameter_name: str | None = None
    evidence: tuple[Evidence, ...] = ()
    fix: DonationFix | None = None
    cell: int | None = None
    definition_cell: int | None = None

    @property
    def sort_key(self):
        return (self.path, self.cell or 0, self.span.line, self.span.col, self.code)


@dataclass(frozen=True)
class Refusal:
    """A donation the analysis considered and deliberately did not propose."""

    path: str
    line: int
    function: str
    parameter: str
    reason: str
    cell: int | None = None  # the notebook cell ``line`` is in


@dataclass
class FileReport:
    """Everything the analysis says about one file.

    ``digest`` is the sha256 of the bytes that were analysed (None when
    unknown): an edit based on this report is valid only for those bytes.
    """

    path: str
    findings: list[Finding] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    digest: str | None = None

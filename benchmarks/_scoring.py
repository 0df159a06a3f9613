"""How the accuracy benchmark judges jaxmem's output against what it knows about the code.

Pure functions over plain data: findings (``_jaxmem_cli.Finding``),
donations (``_donations.Donation``) and the outcome of running a program.
"""

from __future__ import annotations

import collections
import re

from _donations import Donation, Injection
from _jaxmem_cli import Finding

# Failures that mean a donated buffer was read or donated twice: an unsafe fix.
DONATION_FAILURE = re.compile(
    r"Array has been deleted|Buffer has been deleted|donate|[Dd]eleted buffer|is_deleted", re.IGNORECASE
)


def shortcut_differences(baseline: list[Finding], other: list[Finding]) -> dict[str, list[tuple]]:
    """Findings only in ``baseline`` (``missing``) and only in ``other`` (``extra``), by identity."""
    left = collections.Counter(f.identity() for f in baseline)
    right = collections.Counter(f.identity() for f in other)
    return {
        "missing": sorted((left - right).elements()),
        "extra": sorted((right - left).elements()),
    }


def donation_status(donation: Donation) -> str:
    """``rebound`` when every same-file call site rebinds the donated arguments from the result,
    ``not-rebound`` when one does not, ``no-call-site`` when none was found."""
    if not donation.calls:
        return "no-call-site"
    if all(site.donated_args and set(site.donated_args) <= set(site.rebound) for site in donation.calls):
        return "rebound"
    return "not-rebound"


def donated_parameters(donation: Donation) -> list[tuple[int | None, str | None]]:
    """(index, name) of each parameter ``donation`` donates, names where the signature is visible."""
    if donation.keyword == "donate_argnames" or (donation.keyword == "donate" and donation.names):
        index_of = dict(zip(donation.names, donation.indices)) if len(donation.indices) == len(donation.names) else {}
        return [(index_of.get(name), name) for name in donation.names]
    names = dict(zip(donation.indices, donation.names)) if len(donation.indices) == len(donation.names) else {}
    return [(index, names.get(index)) for index in donation.indices]


def matches_parameter(finding: Finding, index: int | None, name: str | None) -> bool:
    """Whether ``finding`` is about the parameter (index, name)."""
    if name is not None and finding.parameter_name is not None:
        return finding.parameter_name == name
    return index is not None and finding.parameter_index == index


def recovered_by(donation: Donation, path: str, index: int | None, name: str | None,
                 findings: list[Finding], codes=("JXM001", "JXM002")) -> Finding | None:
    """The finding of ``codes`` that proposes donating this parameter of this definition, if any."""
    first, last = donation.span
    for finding in findings:
        if finding.code not in codes or _norm(finding.path) != _norm(path):
            continue
        line = finding.definition_line or finding.line
        if first <= line <= last and matches_parameter(finding, index, name):
            return finding
    return None


def restored_in(donation: Donation, index: int | None, name: str | None, fixed: list[Donation]) -> bool:
    """Whether a definition of ``fixed`` (the same file after ``jaxmem-fix``) donates this parameter again."""
    for candidate in fixed:
        if (candidate.bound_to, candidate.wrapped) != (donation.bound_to, donation.wrapped):
            continue
        if name is not None and name in candidate.names:
            return True
        if index is not None and index in candidate.indices:
            return True
    return False


def injected_read_reported(injection: Injection, path: str, findings: list[Finding]) -> Finding | None:
    """The JXM101 at the injected read's line, if any."""
    for finding in findings:
        if finding.code == "JXM101" and finding.line == injection.line and _norm(finding.path) == _norm(path):
            return finding
    return None


def run_outcome(returncode: int | None, output: str) -> str:
    """``passed``, ``timeout``, ``donation-failure`` (output mentions deleted or donated buffers) or ``failed``."""
    if returncode is None:
        return "timeout"
    if returncode == 0:
        return "passed"
    return "donation-failure" if DONATION_FAILURE.search(output) else "failed"


def fix_verdict(before: str, after: str) -> str:
    """Compare a program's outcome before and after the fix.

    ``unsafe``: a new failure about deleted or donated buffers; ``same``: the
    outcome did not change; ``broke``: it failed after but not before (for
    another reason); ``repaired``: it failed before and passes after.
    """
    if after == "donation-failure" and before != "donation-failure":
        return "unsafe"
    if after == before:
        return "same"
    if before == "passed":
        return "broke"
    if after == "passed":
        return "repaired"
    return "same"


def ratio(part: int, whole: int) -> float | None:
    """part / whole, or None for an empty whole."""
    return round(part / whole, 4) if whole else None


def _norm(path: str) -> str:
    return path[2:] if path.startswith("./") else path

"""How the accuracy benchmark judges jaxmem's output against what it knows about the code.

Pure functions over plain data: findings (``_jaxmem_cli.Finding``),
donations (``_donations.Donation``) and the outcome of running a program.
"""

from __future__ import annotations

import collections
import difflib
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


# The codes that propose a donation: with call sites (JXM001, JXM002) and without (JXM003, library code).
PROPOSING_CODES = ("JXM001", "JXM002", "JXM003")


def recovered_by(donation: Donation, path: str, index: int | None, name: str | None,
                 findings: list[Finding], codes=PROPOSING_CODES) -> Finding | None:
    """The finding of ``codes`` that proposes donating this parameter of this definition, if any."""
    first, last = donation.span
    for finding in findings:
        if finding.code not in codes or _norm(finding.path) != _norm(path):
            continue
        line = finding.definition_line or finding.line
        if first <= line <= last and matches_parameter(finding, index, name):
            return finding
    return None


def uncalled_proposals(label: str, findings: list[Finding], donations: dict[str, list]) -> list[dict]:
    """Each JXM003 of ``findings`` (one package's), with whether it names a parameter the authors donate
    (``donations``: their donations per relative path, with the spans they have in the analysed copy)."""
    out = []
    for finding in findings:
        if finding.code != "JXM003":
            continue
        path = _norm(finding.path)
        authored = any(recovered_by(d, path, i, n, [finding], ("JXM003",))
                       for d in donations.get(path, []) for i, n in donated_parameters(d))
        out.append({"package": label, "path": path, "line": finding.line, "parameter": finding.parameter_name,
                    "parameter_index": finding.parameter_index, "authored": authored, "message": finding.message})
    return out


def refusal_of(donation: Donation, path: str, name: str | None, skipped: list[dict]) -> str | None:
    """The reason jaxmem gave (``--format json``'s ``skipped``) for not proposing this parameter, if any."""
    first, last = donation.span
    for entry in skipped:
        if _norm(entry.get("path", "")) == _norm(path) and first <= entry.get("line", 0) <= last \
                and entry.get("parameter") in (name, "*"):
            return entry.get("reason")
    return None


def refusal_category(reason: str) -> str:
    """A refusal reason with names, paths and numbers normalised, cut to its first clauses, for tallies."""
    text = normalize_reason(reason)
    return text if len(text) <= 110 else text[:107] + "..."


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


# What jaxmem's evidence says before the doubts: the call site and what it does with the argument.
_EVIDENCE_LEAD = re.compile(
    r"is rebound by the call's result at|is not read after the call at|^call at \S+ passes a temporary|"
    r"is updated in place and written back by nnx|own result of the loop's previous iteration"
)
_MESSAGE_WHY = re.compile(r"\((?:medium|low) confidence: (.*)\)\s*$", re.DOTALL)


def confidence_doubts(finding: Finding) -> list[str]:
    """What kept ``finding`` from high confidence, as jaxmem wrote it.

    The evidence carries every doubt: a call site's entry is its description
    followed by ``"; "``-separated doubts, and a definition's doubts (public,
    body not visible, ...) are entries of their own.  The message carries
    only the first (``"(medium confidence: WHY)"``): it is the fallback.
    High findings have none.
    """
    if finding.confidence == "high":
        return []
    doubts = []
    for message in finding.evidence:
        for part in message.split("; "):
            part = part.strip()
            if part and not _EVIDENCE_LEAD.search(part) and part not in doubts:
                doubts.append(part)
    if not doubts:
        match = _MESSAGE_WHY.search(finding.message)
        if match:
            doubts.append(match.group(1).strip())
    return doubts


def normalize_reason(text: str) -> str:
    """``text`` with names, code, paths and numbers replaced, so that one kind of reason reads the same."""
    text = re.sub(r"`[^`]*`", "`X`", text)
    text = re.sub(r"[\w./-]+\.py:\d+", "FILE:N", text)
    text = re.sub(r"\d+", "N", text)
    return re.sub(r"`X`(?:(?:, | and )`X`)+", "`X`", text)


# (pattern, category) in order; the first that matches ``text`` names it.
_REASON_CATEGORIES = [
    (r"loop variable taken from", "not proved its own: a loop variable from a container still holding it"),
    (r"holds `[^`]*` twice|twice\b.*returns|returns `[^`]*` in two places", "not proved its own: one value held twice"),
    (r"may return arrays its object still holds",
     "not proved its own: a method's result its object still holds (`{callee}`)"),
    (r"is not assigned here", "not proved its own: not assigned in this function"),
    (r"not proved to be its own: bound by", "not proved its own: bound by a with/for/except target"),
    (r"not proved to be its own", "not proved its own: made by a call jaxmem does not know (`{callee}`)"),
    (r"may share buffers with .*read again at line", "may share buffers with an input of its maker read later"),
    (r"may share buffers with .*the caller may still hold", "may share buffers with an input the caller may hold"),
    (r"may share buffers with .*something else still holds", "may share buffers with an input held elsewhere"),
    (r"may share buffers with .*passed twice", "may share buffers with an input passed twice"),
    (r"may share buffers with", "may share buffers with an input of its maker"),
    (r"which may keep it", "passed to a call which may keep it (`{keeper}`)"),
    (r"returns its argument", "made by a project function that returns its argument"),
    (r"the caller of the enclosing function may still hold it", "a parameter: the caller may still hold it"),
    (r"is owned outside this function", "owned outside the function (attribute or global)"),
    (r"which the caller may still hold|which something else may still hold", "a copy of a value held elsewhere"),
    (r"only through calls jaxmem does not know", "outputs reached only through calls jaxmem does not know"),
    (r"is not visible: no output is known", "jitted body not visible"),
    (r"no output of .* is built from", "no output built from it"),
    (r"is public: callers outside", "public definition: callers outside the project not seen"),
    (r"passed around as a value", "jitted callable passed around as a value"),
    (r"only this file was analysed", "only this file analysed"),
    (r"nnx objects may share their arrays", "nnx objects may share arrays with other Modules"),
]


def reason_category(text: str) -> str:
    """The category of one doubt (``confidence_doubts``), for tallies; unknown texts normalised."""
    for pattern, category in _REASON_CATEGORIES:
        if re.search(pattern, text):
            if "{callee}" in category:
                return category.format(callee=_callee(text.split("its own:", 1)[-1] if "its own:" in text else text))
            if "{keeper}" in category:
                return category.format(keeper=_callee(text.split("passed to", 1)[-1]))
            return category
    return "other: " + normalize_reason(text)


def _callee(text: str) -> str:
    """The last name of the first call in ``text`` (``tx.init(params)`` -> ``.init(...)``), or ``...``."""
    match = re.search(r"`\s*([\w.]+)\s*\(", text)
    if not match:
        return "..."
    name = match.group(1)
    return f".{name.rsplit('.', 1)[-1]}(...)" if "." in name else f"{name}(...)"


def tally_reasons(cases: list[dict]) -> list[tuple[str, int]]:
    """(category, number of cases it holds back) over ``cases`` (each with ``doubts``), most frequent first;
    a case counts once per category."""
    counts = collections.Counter()
    for case in cases:
        counts.update({reason_category(d) for d in case.get("doubts") or ()})
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def fixed_point_changes(first: dict[str, str], second: dict[str, str]) -> list[dict]:
    """The files a second fixer run changed: ``first`` and ``second`` map relative paths to texts
    after the first and the second run; each change with its path and the lines that differ."""
    changes = []
    for path in sorted(set(first) | set(second)):
        before, after = first.get(path), second.get(path)
        if before == after:
            continue
        if before is None or after is None:
            changes.append({"path": path, "lines": [], "what": "created" if before is None else "removed"})
            continue
        old, new = before.splitlines(), after.splitlines()
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        lines = [{"line": i1 + 1, "before": "\n".join(old[i1:i2]), "after": "\n".join(new[j1:j2])}
                 for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
        changes.append({"path": path, "lines": lines, "what": "edited"})
    return changes

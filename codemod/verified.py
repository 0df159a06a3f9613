"""``jaxmem-fix --verified REPORT``: keep only donations the runtime verifier confirmed.

REPORT is the JSON of ``jaxmem confirm --out`` or of ``jaxmem verify --format json``
(or ``--output``).  A ``jaxmem confirm`` report says per proposal whether the
user's run *confirmed* it (observed, never held elsewhere nor read after,
reused): those are applied at any confidence, refuted and unobserved ones
never.  A ``jaxmem verify`` report speaks only of reuse::

    {"format": "jaxmem-verify", "version": 1,
     "reports": [{"definition_path": "train.py", "definition_line": 12,
                  "leaves": [{"parameter": "state", "parameter_index": 0,
                              "aliased": true, ...}, ...], ...}, ...], ...}

A parameter of a definition is confirmed when at least one report of that
definition (one per verified signature) donated leaves of it, and every
such leaf in every report of that definition was reused by an output
(``aliased``).  Anything else (not verified, or a leaf no output took) is
not applied, and the reason is printed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from jaxmem.findings import DonationFix
from jaxmem.sources import UnreadableFile, read_regular_file

FORMAT = "jaxmem-verify"
CONFIRM_FORMAT = "jaxmem-confirm"
MAX_REPORT_BYTES = 256 * 1024 * 1024
SUPPORTED_VERSIONS = (1,)


class VerifiedReportError(Exception):
    """The report cannot be read; the message names the file and what is wrong."""


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    a_parts = os.path.normpath(a).split(os.sep)
    b_parts = os.path.normpath(b).split(os.sep)
    # A relative path recorded elsewhere: compare the trailing components.
    shorter, longer = sorted((a_parts, b_parts), key=len)
    return not os.path.isabs(os.sep.join(shorter)) and longer[-len(shorter):] == shorter


@dataclass
class _ParameterOutcome:
    leaves: int = 0
    unusable: list[str] = field(default_factory=list)


@dataclass
class VerifiedDonations:
    """What a verifier report confirmed, per definition ``(path, line)``."""

    # (path, line) -> parameter key (name or "#index") -> outcome
    outcomes: dict[tuple[str, int], dict[str, _ParameterOutcome]] = field(default_factory=dict)
    # jaxmem confirm reports: (path, line) -> parameter key -> None (confirmed) or why not
    confirmations: dict[tuple[str, int], dict[str, str | None]] | None = None

    @property
    def any_confidence(self) -> bool:
        """Whether a confirmation stands for safety too (a ``jaxmem confirm`` report), so it
        applies a proposal whatever its static confidence."""
        return self.confirmations is not None

    def _definition(self, path: str, line: int):
        for (report_path, report_line), parameters in self.outcomes.items():
            if report_line == line and _same_file(report_path, path):
                return parameters
        return None

    def why_not_confirmed(self, path: str, fix: DonationFix) -> str | None:
        """None when ``fix`` is confirmed, else the reason it is not."""
        if self.confirmations is not None:
            return self._why_not_by_run(path, fix)
        parameters = self._definition(path, fix.definition_line)
        if parameters is None:
            return "the verifier report has no result for this definition; run `jaxmem verify` on it first"
        outcome = None
        if fix.name is not None:
            outcome = parameters.get(fix.name)
        if outcome is None and fix.index is not None:
            outcome = parameters.get(f"#{fix.index}")
        if outcome is None or outcome.leaves == 0:
            return "the verifier did not donate this parameter, so it is not confirmed"
        if outcome.unusable:
            return f"the verifier found no output that reuses {', '.join(sorted(set(outcome.unusable)))}"
        return None

    def _why_not_by_run(self, path: str, fix: DonationFix) -> str | None:
        parameters = next((found for (report_path, line), found in self.confirmations.items()
                           if line == fix.definition_line and _same_file(report_path, path)), None)
        if parameters is None:
            return "the `jaxmem confirm` run had no proposal for this definition; run it again on this code"
        for key in (fix.name, f"#{fix.index}" if fix.index is not None else None):
            if key is not None and key in parameters:
                return parameters[key]
        return "the `jaxmem confirm` run had no proposal for this parameter; run it again on this code"


def _confirm_outcomes(path: str, document: dict) -> VerifiedDonations:
    proposals = document.get("proposals")
    if not isinstance(proposals, list) or not all(isinstance(p, dict) for p in proposals):
        raise VerifiedReportError(f"{path}: \"proposals\" must be a list of objects; write it with "
                                  "`jaxmem confirm --out FILE -- python train.py`")
    base = os.path.dirname(os.path.abspath(path))
    confirmations: dict[tuple[str, int], dict[str, str | None]] = {}
    for proposal in proposals:
        definition_path, line = proposal.get("definition_path"), proposal.get("definition_line")
        if not isinstance(definition_path, str) or not definition_path or not isinstance(line, int):
            continue
        if not os.path.isabs(definition_path) and not os.path.exists(definition_path):
            definition_path = os.path.join(base, definition_path)
        outcome = proposal.get("outcome")
        refutations = [r.get("message", "") for r in proposal.get("refutations") or [] if isinstance(r, dict)]
        why = (None if outcome == "confirmed" else
               f"{_REFUTED_PREFIX}: {refutations[0]}" if outcome == "refuted" and refutations else
               "the run did not observe it (no call made with the donation); run a command that reaches it"
               if outcome == "not observed" else f"the run did not confirm it ({outcome})")
        parameters = confirmations.setdefault((definition_path, line), {})
        keys = [proposal.get("parameter_name")]
        if isinstance(proposal.get("parameter_index"), int):
            keys.append(f"#{proposal['parameter_index']}")
        for key in keys:
            if isinstance(key, str):
                parameters[key] = _stronger(parameters.get(key, _UNSEEN), why)
    return VerifiedDonations(confirmations=confirmations)


_UNSEEN = "?"
_REFUTED_PREFIX = "refuted by the run"


def _stronger(earlier: str | None, later: str | None) -> str | None:
    """One verdict from two on the same parameter: a refutation wins, then a confirmation,
    then the first other reason (each run covers only the paths it took)."""
    for verdict in (earlier, later):
        if verdict is not None and verdict.startswith(_REFUTED_PREFIX):
            return verdict
    if earlier is None or later is None:
        return None
    return later if earlier == _UNSEEN else earlier


def _merged(first: VerifiedDonations, second: VerifiedDonations, path: str) -> VerifiedDonations:
    """Two reports of one kind as one: confirm verdicts by :func:`_stronger`, verify leaves added up."""
    if first.any_confidence != second.any_confidence:
        raise VerifiedReportError(f"{path}: a {'confirm' if second.any_confidence else 'verify'} report given "
                                  f"with {'verify' if second.any_confidence else 'confirm'} reports; pass "
                                  "--verified with reports of one kind (`jaxmem confirm --out` or `jaxmem verify`)")
    if first.confirmations is not None:
        for definition, parameters in second.confirmations.items():
            merged = first.confirmations.setdefault(definition, {})
            for key, why in parameters.items():
                merged[key] = _stronger(merged.get(key, _UNSEEN), why)
        return first
    for definition, parameters in second.outcomes.items():
        merged = first.outcomes.setdefault(definition, {})
        for key, outcome in parameters.items():
            total = merged.setdefault(key, _ParameterOutcome())
            total.leaves += outcome.leaves
            total.unusable.extend(outcome.unusable)
    return first


def load_verified_reports(paths: list[str]) -> VerifiedDonations:
    """Read several reports of one kind as one (``--verified`` given more than once).

    Confirm reports: a donation is confirmed when some run confirmed it and
    no run refuted it.  Verify reports: every donated leaf of the parameter,
    in every report, must have been reused.  Raises :class:`VerifiedReportError`.
    """
    combined = load_verified(paths[0])
    for path in paths[1:]:
        combined = _merged(combined, load_verified(path), path)
    return combined


def load_verified(path: str) -> VerifiedDonations:
    """Read a ``jaxmem verify`` JSON report; raises :class:`VerifiedReportError`."""
    try:
        document = json.loads(read_regular_file(path, MAX_REPORT_BYTES).decode("utf-8"))
    except UnreadableFile as error:
        raise VerifiedReportError(f"{path}: cannot read the verifier report: {error}") from None
    except UnicodeDecodeError:
        raise VerifiedReportError(f"{path}: not UTF-8; write it with `jaxmem verify --format json`") from None
    except RecursionError:
        raise VerifiedReportError(f"{path}: nested too deeply to be a jaxmem verify report") from None
    except json.JSONDecodeError as error:
        raise VerifiedReportError(
            f"{path}: not JSON ({error.msg} at line {error.lineno}); write it with `jaxmem verify --format json`"
        ) from None
    if isinstance(document, dict) and document.get("format") == CONFIRM_FORMAT:
        if document.get("version") != 1:
            raise VerifiedReportError(f"{path}: confirm report version {document.get('version')!r} is not "
                                      "supported (this jaxmem-fix reads version 1); update jaxmem")
        return _confirm_outcomes(path, document)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise VerifiedReportError(f"{path}: not a jaxmem verify report (nor a confirm report); write it with "
                                  "`jaxmem confirm --out FILE -- ...` or `jaxmem verify --format json`")
    if document.get("version") not in SUPPORTED_VERSIONS:
        raise VerifiedReportError(
            f"{path}: verifier report version {document.get('version')!r} is not supported "
            f"(this jaxmem-fix reads version {', '.join(map(str, SUPPORTED_VERSIONS))}); update jaxmem"
        )
    verified = VerifiedDonations()
    base = os.path.dirname(os.path.abspath(path))
    reports = document.get("reports", [])
    if not isinstance(reports, list) or not all(isinstance(r, dict) for r in reports):
        raise VerifiedReportError(f"{path}: \"reports\" must be a list of objects; write it with "
                                  "`jaxmem verify --format json`")
    for report in reports:
        definition_path, line = report.get("definition_path"), report.get("definition_line")
        if not isinstance(definition_path, str):
            continue
        if not definition_path or not isinstance(line, int):
            continue
        if not os.path.isabs(definition_path) and not os.path.exists(definition_path):
            definition_path = os.path.join(base, definition_path)
        parameters = verified.outcomes.setdefault((definition_path, line), {})
        leaves = report.get("leaves", [])
        for leaf in leaves if isinstance(leaves, list) else ():
            if not isinstance(leaf, dict):
                continue
            keys = {leaf.get("parameter")} if isinstance(leaf.get("parameter"), str) else set()
            if isinstance(leaf.get("parameter_index"), int):
                keys.add(f"#{leaf['parameter_index']}")
            for key in keys - {None}:
                outcome = parameters.setdefault(key, _ParameterOutcome())
                outcome.leaves += 1
                if not leaf.get("aliased"):
                    outcome.unusable.append(str(leaf.get("path") or key))
    return verified

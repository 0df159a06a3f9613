"""Renderers: text (flake8 format), JSON (versioned schema), SARIF 2.1.0,
GitHub Actions workflow commands and GitLab Code Quality (Code Climate JSON).

In a notebook a finding's lines count within its cell (``finding.cell``):
text shows ``path:cell N:line:col`` as ruff does, JSON a ``cell`` key,
SARIF the region within the cell and a ``cell`` property.

This is the one place that converts positions.  :class:`Span` holds
1-based lines and 0-based character columns; every format here shows
1-based columns (``col + 1``), and end columns are exclusive, so an
``end_col`` here is the 1-based column just after the range, as SARIF
defines ``endColumn``.  The JSON schema is documented in
``docs/json-schema.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import quote

import jaxmem
from jaxmem.findings import Evidence, FileReport, Finding, Severity
from jaxmem.messages import printable

JSON_SCHEMA_VERSION = 1
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
FORMATS = ("text", "json", "sarif", "github", "gitlab")
GITHUB_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
# Code Climate severities: info, minor, major, critical, blocker.
GITLAB_SEVERITIES = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}

BOLD, RED, CYAN, RESET = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"


def all_findings(reports: list[FileReport]) -> list[Finding]:
    """Every finding of ``reports`` in (path, line, col, code) order."""
    return sorted((f for r in reports for f in r.findings), key=lambda f: f.sort_key)


def available_rules() -> dict:
    """The rule registry (``code -> Rule``), or ``{}`` while it cannot be imported."""
    try:
        from jaxmem.lint.rules import RULES
    except ImportError:
        return {}
    return dict(RULES)


def use_color(stream, environ=os.environ) -> bool:
    """Colour for a TTY only; ``NO_COLOR`` turns it off, ``FORCE_COLOR`` on."""
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def render(output_format: str, reports: list[FileReport], *, color: bool = False,
           rules: dict | None = None, source_lines=None) -> str:
    """Render ``reports`` in one of :data:`FORMATS` (``source_lines``: see :func:`render_text`).

    File names that are not valid UTF-8 are shown with U+FFFD in place of
    their undecodable bytes, so every output is valid UTF-8 (and JSON).
    """
    if output_format == "text":
        return printable(render_text(all_findings(reports), color=color, source_lines=source_lines))
    if output_format == "json":
        return printable(render_json(reports))
    if output_format == "sarif":
        return printable(render_sarif(reports, available_rules() if rules is None else rules))
    if output_format == "github":
        return printable(render_github(all_findings(reports)))
    if output_format == "gitlab":
        return printable(render_gitlab(all_findings(reports)))
    raise ValueError(f"unknown output format {output_format!r}; use one of {', '.join(FORMATS)}")


def location(f: Finding) -> str:
    """``path:line:col`` (1-based column), ``path:cell N:line:col`` in a notebook, as ruff writes it."""
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.path}:{cell}{f.span.line}:{f.span.col + 1}"


def render_text(findings: list[Finding], *, color: bool = False, source_lines=None) -> str:
    """One ``path:line:col: CODE message`` line per finding (1-based column).

    ``source_lines(finding)``, when given, returns the finding's source line
    (or None), shown under it with a caret at the column (``--show-source``).
    """
    lines = []
    for f in findings:
        if color:
            cell = f"cell {f.cell}{CYAN}:{RESET}" if f.cell is not None else ""
            lines.append(
                f"{BOLD}{f.path}{RESET}{CYAN}:{RESET}{cell}{f.span.line}{CYAN}:{RESET}"
                f"{f.span.col + 1}{CYAN}:{RESET} {BOLD}{RED}{f.code}{RESET} {f.message}"
            )
        else:
            lines.append(f"{location(f)}: {f.code} {f.message}")
        source = source_lines(f) if source_lines is not None else None
        if source is not None:
            lines.extend(_source_excerpt(source, f, color))
    return "".join(line + "\n" for line in lines)


def _source_excerpt(source: str, f: Finding, color: bool) -> list[str]:
    """The finding's line and a caret under its range, as flake8's ``--show-source`` prints them."""
    source = source.expandtabs(1).rstrip()
    width = f.span.end_col - f.span.col if f.span.end_line == f.span.line else len(source) - f.span.col
    marker = " " * f.span.col + "^" * max(1, min(width, len(source) - f.span.col))
    return [f"    {source}", f"    {RED}{marker}{RESET}" if color else f"    {marker}"]


def render_github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands, one per finding: ``::warning file=...,line=...::message``.

    Escaping follows GitHub's "Workflow commands" documentation: ``%``,
    CR and LF in the message, and also ``:`` and ``,`` in property values.
    A notebook finding names its cell in the title and no line (a line
    number would point into the notebook's JSON).
    """
    out = []
    for f in findings:
        properties = [("file", f.path)]
        if f.cell is None:
            properties += [("line", f.span.line), ("col", f.span.col + 1)]
            if (f.span.end_line, f.span.end_col) > (f.span.line, f.span.col):
                # 1-based and just past the range, as ruff's github format and SARIF's endColumn
                properties += [("endLine", f.span.end_line), ("endColumn", f.span.end_col + 1)]
            properties.append(("title", f.code))
        else:
            properties.append(("title", f"{f.code} (cell {f.cell}:{f.span.line}:{f.span.col + 1})"))
        spelled = ",".join(f"{key}={_github_property(str(value))}" for key, value in properties)
        out.append(f"::{GITHUB_COMMANDS[f.severity]} {spelled}::{_github_data(f.message)}\n")
    return "".join(out)


def _github_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")


def render_gitlab(findings: list[Finding]) -> str:
    """A GitLab Code Quality report (Code Climate JSON): one issue per finding.

    A notebook finding names its cell in the description and points at line 1.
    """
    seen: dict[str, int] = {}
    issues = []
    for f in findings:
        where = f"cell {f.cell}:{f.span.line}:{f.span.col + 1}: " if f.cell is not None else ""
        issues.append({
            "description": f"{where}{f.code} {f.message}",
            "check_name": f.code,
            "fingerprint": _fingerprint(f, seen),
            "severity": GITLAB_SEVERITIES[f.severity],
            "location": {"path": f.path, "lines": {"begin": 1 if f.cell is not None else f.span.line}},
        })
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


def render_statistics(findings: list[Finding], rules: dict | None = None) -> str:
    """Counts per code, most frequent first: ``count  CODE  rule-name``."""
    rules = available_rules() if rules is None else rules
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    width = len(str(max(counts.values(), default=0)))
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "".join(
        f"{count:>{width}}  {code}  {getattr(rules.get(code), 'name', '')}".rstrip() + "\n"
        for code, count in rows
    )


def finding_to_json(f: Finding) -> dict:
    """One finding as the JSON schema (version 1) describes it."""
    has_parameter = f.parameter_index is not None or f.parameter_name is not None
    return {
        "code": f.code,
        "path": f.path,
        "cell": f.cell,
        "line": f.span.line,
        "col": f.span.col + 1,
        "end_line": f.span.end_line,
        "end_col": f.span.end_col + 1,
        "message": f.message,
        "severity": f.severity.value,
        "confidence": f.confidence.value,
        "function": f.function,
        "wrapped": f.wrapped,
        "definition": (
            {"path": f.definition_path or f.path, "line": f.definition_line,
             "cell": f.definition_cell}
            if f.definition_line is not None else None
        ),
        "parameter": (
            {"index": f.parameter_index, "name": f.parameter_name} if has_parameter else None
        ),
        "evidence": [_evidence_to_json(e) for e in f.evidence],
        "fix": f.fix is not None,
    }


def render_json(reports: list[FileReport]) -> str:
    """The JSON document: version, tool, findings and skipped donations."""
    document = {
        "version": JSON_SCHEMA_VERSION,
        "tool": {"name": "jaxmem", "version": jaxmem.__version__},
        "findings": [finding_to_json(f) for f in all_findings(reports)],
        "skipped": [
            {"path": r.path, "cell": r.cell, "line": r.line, "function": r.function,
             "parameter": r.parameter, "reason": r.reason}
            for report in reports for r in report.refusals
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render_sarif(reports: list[FileReport], rules: dict, *, base: Path | None = None) -> str:
    """A SARIF 2.1.0 log GitHub code scanning accepts.

    Relative paths are emitted relative to ``%SRCROOT%`` (``base``, by
    default the current folder, where relative paths are anchored).
    """
    base = (base or Path.cwd()).absolute()
    findings = all_findings(reports)
    descriptors = sorted(rules.values(), key=lambda r: r.code)
    index = {rule.code: i for i, rule in enumerate(descriptors)}
    driver_rules = [_rule_to_sarif(rule) for rule in descriptors]
    for code in sorted({f.code for f in findings} - set(index)):
        index[code] = len(driver_rules)
        driver_rules.append(_unknown_rule_to_sarif(code))
    seen: dict[str, int] = {}
    results = []
    for f in findings:
        results.append(_result_to_sarif(f, index[f.code], base, seen))
    run = {
        "tool": {
            "driver": {
                "name": "jaxmem",
                "version": jaxmem.__version__,
                "semanticVersion": jaxmem.__version__,
                "rules": driver_rules,
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": base.as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    document = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _evidence_to_json(e: Evidence) -> dict:
    return {"message": e.message, "path": e.path, "cell": e.cell, "line": e.line}


def _rule_to_sarif(rule) -> dict:
    level = SARIF_LEVELS[Severity(rule.severity)]
    rendered = rule.render()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.documentation},
        "help": {"text": rendered, "markdown": rendered},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": ["jax", "memory", "donation"]},
    }


def _unknown_rule_to_sarif(code: str) -> dict:
    text = "file could not be analysed" if code == "JXM900" else f"jaxmem rule {code}"
    return {
        "id": code,
        "shortDescription": {"text": text},
        "fullDescription": {"text": text},
        "help": {"text": text},
        "defaultConfiguration": {"level": "error" if code == "JXM900" else "warning"},
    }


def _artifact(path: str, base: Path) -> dict:
    """A relative path is relative to ``base``; an absolute one is made so when inside it."""
    absolute = Path(os.path.normpath(os.path.join(base, path)))
    try:
        relative = absolute.relative_to(base)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(os.fsencode(relative.as_posix())), "uriBaseId": "%SRCROOT%"}


def _region(line: int, col: int, end_line: int, end_col: int) -> dict:
    region = {"startLine": line, "startColumn": col + 1}
    if (end_line, end_col) > (line, col):
        region["endLine"] = end_line
        region["endColumn"] = end_col + 1
    return region


def _result_to_sarif(f: Finding, rule_index: int, base: Path, seen: dict[str, int]) -> dict:
    result = {
        "ruleId": f.code,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS[f.severity],
        "message": {"text": f.message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": _artifact(f.path, base),
                "region": _region(f.span.line, f.span.col, f.span.end_line, f.span.end_col),
            }
        }],
        "partialFingerprints": {"jaxmemFinding/v1": _fingerprint(f, seen)},
        "properties": {"confidence": f.confidence.value, "fix": f.fix is not None},
    }
    if f.cell is not None:  # the region counts lines within this notebook cell
        result["properties"]["cell"] = f.cell
    if f.evidence:
        result["relatedLocations"] = [
            {
                "id": i,
                "message": {"text": e.message},
                "physicalLocation": {
                    "artifactLocation": _artifact(e.path, base),
                    "region": {"startLine": e.line},
                },
                **({"properties": {"cell": e.cell}} if e.cell is not None else {}),
            }
            for i, e in enumerate(f.evidence)
        ]
    return result


def _fingerprint(f: Finding, seen: dict[str, int]) -> str:
    """Stable across unrelated edits: no line numbers, only what the finding is about.

    Findings that would share a fingerprint are told apart by their order.
    """
    identity = "\0".join(
        str(part) for part in (f.code, f.path, f.function, f.wrapped, f.parameter_name)
    )
    if f.function is None and f.parameter_name is None:
        identity += "\0" + f.message
    occurrence = seen.get(identity, 0)
    seen[identity] = occurrence + 1
    return hashlib.sha256(f"{identity}\0{occurrence}".encode("utf-8", "surrogateescape")).hexdigest()

"""``jaxmem confirm``, in the jaxmem process: proposals in, runs merged, report out.

Nothing here imports jax.  :func:`static_proposals` asks the whole-project
analysis (as ``jaxmem check`` does) for every donation it proposes, at any
confidence.  The command then runs the user's program under
:mod:`jaxmem.runtime_check.confirm`, again with refuted proposals off when
a read after donation raised in the program (see :func:`merge_runs`), and
ends each proposal as *confirmed*, *refuted* or *not observed*.

The JSON report (``--out``) is the input of ``jaxmem-fix --verified``::

    {"format": "jaxmem-confirm", "version": 1, "command": [...], "exit_status": 0, "runs": 1,
     "proposals": [{"definition_path": "/abs/train.py", "definition_line": 12, "function": "step",
                    "parameter_name": "state", "parameter_index": 0, "confidence": "medium",
                    "outcome": "confirmed", "calls": 20, "donated_calls": 20, "scanned_calls": 3,
                    "reuse": {"leaves": 8, "reused_leaves": 8, "reused_bytes": 3392, ...},
                    "refutations": [], "notes": []}, ...]}
"""

from __future__ import annotations

import os

from jaxmem.runtime_check.units import format_bytes

FORMAT = "jaxmem-confirm"
VERSION = 1
CONFIRMED, REFUTED, NOT_OBSERVED = "confirmed", "refuted", "not observed"
PROPOSING_CODE = "JXM001"


def static_proposals(paths: list[str]) -> list[dict]:
    """Every donation the whole-project analysis proposes (JXM001 with a fix), at any confidence."""
    import dataclasses

    from jaxmem.api import check_paths
    from jaxmem.config import load_config
    from jaxmem.findings import Confidence

    config = load_config(paths)
    settings = dataclasses.replace(config.settings, min_confidence=Confidence.LOW)
    reports = check_paths([str(config.root)], settings)
    proposals = []
    for report in reports:
        for finding in report.findings:
            if finding.code != PROPOSING_CODE or finding.fix is None:
                continue
            path = os.path.abspath(finding.definition_path or finding.path)
            proposals.append({
                "definition_path": path, "definition_line": finding.fix.definition_line,
                "function": finding.function or finding.wrapped or "?",
                "parameter_name": finding.fix.name, "parameter_index": finding.fix.index,
                "confidence": finding.confidence.value, "code": finding.code,
            })
    unique = {(p["definition_path"], p["definition_line"], p["parameter_name"], p["parameter_index"]): p
              for p in proposals}
    return list(unique.values())


def outcome_of(proposal: dict) -> str:
    """confirmed, refuted or not observed."""
    if proposal["refutations"]:
        return REFUTED
    if proposal["donated_calls"] == 0:
        return NOT_OBSERVED
    reuse = proposal.get("reuse") or {}
    if not reuse.get("reused_leaves"):
        return NOT_OBSERVED
    return CONFIRMED


def merge_runs(runs: list[dict]) -> list[dict]:
    """One entry per proposal: refutations from every run, counts from the last run.

    Each run after the first repeats the program with the proposals refuted
    so far turned off, so the last run is the complete one.
    """
    merged: dict[str, dict] = {}
    for run in runs:
        for proposal in run["proposals"]:
            key = proposal["key"]
            earlier = merged.get(key)
            refutations = (earlier["refutations"] if earlier else []) + [
                r for r in proposal["refutations"] if not earlier or r not in earlier["refutations"]]
            notes = (earlier["notes"] if earlier else []) + [
                n for n in proposal["notes"] if not earlier or n not in earlier["notes"]]
            entry = dict(proposal, refutations=refutations, notes=notes)
            if earlier is not None and proposal["calls"] == 0 and earlier["calls"]:
                for name in ("calls", "donated_calls", "scanned_calls", "reuse"):
                    entry[name] = earlier[name]
            merged[key] = entry
    result = []
    for entry in merged.values():
        entry.pop("active", None)
        entry["outcome"] = outcome_of(entry)
        result.append(entry)
    return sorted(result, key=lambda p: (p["definition_path"], p["definition_line"], p["key"]))


def document(command: list[str], runs: list[dict], exit_status: int) -> dict:
    """The JSON report."""
    return {"format": FORMAT, "version": VERSION, "command": list(command), "exit_status": exit_status,
            "runs": len(runs), "proposals": merge_runs(runs)}


def render(report: dict) -> str:
    """The text report of ``jaxmem confirm``."""
    from jaxmem.runtime_check.runs import relative

    notebooks: dict = {}

    def where_of(path: str, line: int) -> str:
        cell, in_cell = _cell_line(path, line, notebooks)
        return f"{relative(path)}:{line}" if cell is None else f"{relative(path)}:cell {cell}:{in_cell}"

    called = [p for p in report["proposals"] if p["calls"] or p["refutations"]]
    lines, counts = proposal_lines(called, where_of, never_called="the run never called it")
    uncalled = len(report["proposals"]) - len(called)
    counts[NOT_OBSERVED] += uncalled
    if uncalled:
        lines.append(f"{uncalled} more proposed donation(s) the run never called: not observed (the JSON report "
                     "lists them)")
    runs = report["runs"]
    rerun = f" (the command ran {runs} times: a read after donation raised, so it ran again without the " \
            "refuted donations)" if runs > 1 else ""
    lines.append(f"jaxmem confirm: {counts[CONFIRMED]} confirmed, {counts[REFUTED]} refuted, "
                 f"{counts[NOT_OBSERVED]} not observed of {len(report['proposals'])} proposed donation(s){rerun}; "
                 f"the command exited with status {report['exit_status']}")
    if counts[CONFIRMED]:
        lines.append("apply the confirmed ones with `jaxmem-fix --verified REPORT` (REPORT: this command's --out); "
                     "a confirmation covers the paths this run took, not others")
    return "\n".join(lines)


def proposal_lines(proposals: list[dict], where_of, never_called: str) -> tuple[list[str], dict[str, int]]:
    """``(lines, counts by outcome)``: each merged proposal's outcome in words, its
    definition named by ``where_of(path, line)``."""
    lines = []
    counts = {CONFIRMED: 0, REFUTED: 0, NOT_OBSERVED: 0}
    for proposal in proposals:
        counts[proposal["outcome"]] += 1
        where = where_of(proposal["definition_path"], proposal["definition_line"])
        parameter = proposal["parameter_name"] or f"#{proposal['parameter_index']}"
        head = f"{where}: {proposal['function']}: donate `{parameter}` ({proposal['confidence']} confidence): "
        if proposal["outcome"] == CONFIRMED:
            reuse = proposal["reuse"]
            lines.append(head + f"CONFIRMED: {proposal['calls']} call(s) observed, {proposal['donated_calls']} "
                         f"made with the donation, all clean; an output reuses {reuse['reused_leaves']} of "
                         f"{reuse['leaves']} leaves ({format_bytes(reuse['reused_bytes'])} saved per call)")
            lines.extend(f"    not reused: {text}" for text in reuse.get("not_reused", []))
        elif proposal["outcome"] == REFUTED:
            lines.append(head + "REFUTED")
            lines.extend(f"    {r['kind']}: {_relative_text(r['message'])}" for r in proposal["refutations"])
        else:
            why = (never_called if proposal["calls"] == 0 else
                   f"called {proposal['calls']} time(s) but the donation was never applied"
                   if proposal["donated_calls"] == 0 else
                   f"the reuse check failed: {(proposal.get('reuse') or {}).get('error', 'no reused leaf')}")
            lines.append(head + f"NOT OBSERVED: {why}")
        lines.extend(f"    note: {_relative_text(note)}" for note in proposal["notes"])
    return lines, counts


def _cell_line(path: str, line: int, notebooks: dict) -> tuple[int | None, int]:
    """``(cell, line in it)`` of a notebook's joined line ``line``; ``(None, line)`` for any other file."""
    from jaxmem.notebooks import NotebookError, is_notebook
    from jaxmem.runtime_check.notebook_run import read_notebook_file
    from jaxmem.sources import UnreadableFile

    if not is_notebook(path):
        return None, line
    if path not in notebooks:
        try:
            notebooks[path] = read_notebook_file(path)
        except (OSError, UnreadableFile, NotebookError):
            notebooks[path] = None
    return (None, line) if notebooks[path] is None else notebooks[path].locate(line)


def _relative_text(text: str) -> str:
    cwd = os.getcwd() + os.sep
    return text.replace(cwd, "")

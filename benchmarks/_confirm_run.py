"""Confirm-then-fix: the proposals the default fix leaves alone, settled by the project's own tests.

What a user does with a medium proposal: run the tests (or a short
training run) under ``jaxmem confirm``, then ``jaxmem-fix --verified``.
For each sdist of the corpus, in one copy of the project:

1. the runs: every test or example that ``jaxmem-fix --unsafe-fixes``
   changes, and the module test (``x_test.py``, ``test_x.py``) of every
   other file it changes, that passes as shipped (the same test selection
   as fix-then-run);
2. each run under ``jaxmem confirm --out`` on the default-fixed copy (the project's venv, jaxmem
   installed beside it; the analysis cache is warm after the first run);
3. ``jaxmem-fix`` first (the high-confidence fixes a user applies before
   confirming), then ``jaxmem-fix --verified R1 --verified R2 ...`` on that
   copy: what some run confirmed and none refuted, at any confidence;
4. every run again on the fixed copy.  A new failure that mentions deleted
   or donated buffers is an unsafe fix, as in fix-then-run.

The figures: proposals confirmed, refuted and not observed (by static
confidence), donation keywords added by the default fix alone and by both
fixes, and the runs after both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import _jaxmem_cli as jaxmem
from _corpus import project_dir
from _fix_run import VENVS, _copy, changed_tests, project_venv, run_file, runnable_files
from _scoring import fix_verdict

def install_jaxmem(work: Path, log) -> Path:
    """This checkout's jaxmem (not editable) in a folder of ``work`` the run venvs put on ``PYTHONPATH``
    (one per work folder, so runs with different ``TMPDIR``s do not share it)."""
    site = work / "jaxmem-site"
    if site.exists():
        shutil.rmtree(site)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                    "--target", str(site), str(jaxmem.REPO)], check=True, capture_output=True, text=True)
    log(f"jaxmem installed for the run venvs in {site}")
    return site


def module_tests(relative: str, runnable: set[str]) -> list[str]:
    """The runnable tests named after the module ``relative``: beside it, or in a ``tests`` folder."""
    path = Path(relative)
    names = {f"{path.stem}_test.py", f"test_{path.stem}.py"}
    return sorted(r for r in runnable if Path(r).name in names
                  and (Path(r).parent == path.parent or "tests" in Path(r).parts))


def _selection(source: Path, relative: str, unsafe_copy: Path) -> list[str] | None:
    """The test functions the unsafe fix touched in ``relative`` (None: the whole file)."""
    before = (source / relative).read_bytes()
    after = (unsafe_copy / relative).read_bytes()
    if before == after:
        return None
    return changed_tests(before.decode("utf-8"), after.decode("utf-8")) or None


def _confirm(python: Path, root: Path, relative: str, tests: list[str] | None, report: Path,
             timeout: float, site: Path) -> tuple[str, str]:
    """Run ``relative`` under ``jaxmem confirm --out report`` (the command's own outcome), with the
    jaxmem installed in ``site``."""
    return run_file(python, root, relative, timeout, tests,
                    wrapper=[str(python), "-m", "jaxmem.cli", "confirm", "--out", str(report), "--"],
                    extra_path=[str(site)])


def _proposals(report: Path) -> list[dict]:
    if not report.exists():
        return []
    return json.loads(report.read_text(encoding="utf-8"))["proposals"]


def _combined(reports: list[Path], root: Path) -> dict[tuple, dict]:
    """(definition, parameter) -> confidence and outcome over all runs: refuted beats confirmed."""
    combined: dict[tuple, dict] = {}
    for report in reports:
        for proposal in _proposals(report):
            key = (os.path.relpath(proposal["definition_path"], root), proposal["definition_line"],
                   proposal["parameter_name"] or f"#{proposal['parameter_index']}")
            entry = combined.setdefault(key, {"confidence": proposal["confidence"], "outcome": "not observed"})
            if proposal["outcome"] == "refuted" or entry["outcome"] == "refuted":
                entry["outcome"] = "refuted"
                entry.setdefault("why", (proposal.get("refutations") or [{}])[0].get("message", "")[:300])
            elif proposal["outcome"] == "confirmed":
                entry["outcome"] = "confirmed"
    return combined


def _added_donations(before: Path, after: Path, files: list[str]) -> int:
    """How many ``donate`` keywords ``files`` gained (a count of applied parameters, roughly)."""
    added = 0
    for relative in files:
        old = (before / relative).read_text(encoding="utf-8").count("donate")
        new = (after / relative).read_text(encoding="utf-8").count("donate")
        added += max(new - old, 0)
    return added


def confirmable(packages, venvs: Path = VENVS) -> tuple[list, list[str]]:
    """``(ready, skipped)``: the ``packages`` confirm-then-fix can run (sdists whose run venv
    fix-then-run made, so their tests run at all), and a line for each of the others saying why."""
    ready, skipped = [], []
    for name, version, kind in packages:
        label = f"{name}-{version}"
        if kind != "sdist":
            skipped.append(f"{label}: a {kind}, which ships no tests to run")
        elif not (venvs / label / "installed.txt").exists():
            skipped.append(f"{label}: no run venv in {venvs}; run fix-then-run for it first (--fix-run-into)")
        else:
            ready.append((name, version, kind))
    return ready, skipped


def measure_confirm_then_fix(packages, *, timeout: float, budget_s: float, log, work: Path) -> dict:
    """Steps 1-4 over the sdists of ``packages`` that have a run venv; no run starts after ``budget_s``."""
    started = time.perf_counter()
    packages, skipped = confirmable(packages)
    for line in skipped:
        log(f"not measured: {line}")
    site = install_jaxmem(work, log)
    projects, cases = [], []
    for name, version, kind in packages:
        label = f"{name}-{version}"
        if budget_s > 0 and time.perf_counter() - started > budget_s:
            log(f"{label}: not measured, the run budget is spent")
            break
        source = project_dir(name, version, kind)
        python, _ = project_venv(label, source, log)
        unsafe_copy = _copy(source, work / f"{label}-confirm-unsafe")
        jaxmem.fix(["."], unsafe_copy, unsafe=True)
        files = [str(p.relative_to(source)) for p in sorted(source.rglob("*.py"))]
        changed = [f for f in files if (unsafe_copy / f).read_bytes() != (source / f).read_bytes()]
        runnable = set(runnable_files(source))
        chosen = {f: _selection(source, f, unsafe_copy) for f in changed if f in runnable}
        for library in (f for f in changed if f not in runnable):
            for test in module_tests(library, runnable):
                chosen.setdefault(test, None)
        before_copy = _copy(source, work / f"{label}-confirm-before")
        watched = _copy(source, work / f"{label}-confirm")
        jaxmem.fix(["."], watched, unsafe=False)  # what a user applies first; confirm watches the rest
        default_changed = [f for f in files if (watched / f).read_bytes() != (source / f).read_bytes()]
        default_donations = _added_donations(source, watched, default_changed)
        runs, reports = [], []
        for index, (relative, tests) in enumerate(sorted(chosen.items())):
            if budget_s > 0 and time.perf_counter() - started > budget_s:
                log(f"{label}: stopping, the run budget is spent")
                break
            before, _ = run_file(python, before_copy, relative, timeout, tests)
            if before != "passed":
                continue
            report = work / f"{label}-confirm-{index}.json"
            report.unlink(missing_ok=True)
            log(f"{label}: confirm -- {relative}{' -k ' + ' or '.join(tests) if tests else ''}")
            confirmed_run, _ = _confirm(python, watched, relative, tests, report, 3 * timeout, site)
            runs.append((relative, tests, confirmed_run))
            if report.exists():
                reports.append(report)
        if reports:
            jaxmem.fix(["."], watched, unsafe=False, verified=reports)
        verified_changed = [f for f in files if (watched / f).read_bytes() != (source / f).read_bytes()]
        for relative, tests, confirmed_run in runs:
            after, evidence = run_file(python, watched, relative, timeout, tests)
            cases.append({"package": label, "path": relative, "tests": tests, "under_confirm": confirmed_run,
                          "before": "passed", "after": after, "verdict": fix_verdict("passed", after),
                          "evidence": evidence})
        combined = _combined(reports, watched)
        projects.append({
            "package": label, "runs": len(runs), "reports": len(reports),
            "proposals": [{"definition": f"{k[0]}:{k[1]}", "parameter": k[2], **v} for k, v in combined.items()],
            "default_fix_files": len(default_changed),
            "default_fix_donations": default_donations,
            "verified_fix_files": len(verified_changed),
            "verified_fix_donations": _added_donations(source, watched, verified_changed),
        })
        log(f"{label}: {len(runs)} runs under confirm; with the verified fix {len(verified_changed)} files "
            f"changed (by the default fix alone {len(default_changed)})")
    return {"summary": _summary(projects, cases), "projects": projects, "cases": cases,
            "seconds": round(time.perf_counter() - started, 1)}


def merged_section(earlier: dict | None, fresh: dict) -> dict:
    """``fresh``, plus the projects and runs of ``earlier`` for packages ``fresh`` did not measure."""
    if not earlier:
        return fresh
    measured = {project["package"] for project in fresh["projects"]}
    projects = [p for p in earlier["projects"] if p["package"] not in measured] + fresh["projects"]
    cases = [c for c in earlier["cases"] if c["package"] not in measured] + fresh["cases"]
    return {**fresh, "summary": _summary(projects, cases), "projects": projects, "cases": cases}


def _summary(projects: list[dict], cases: list[dict]) -> dict:
    outcomes = Counter((p["confidence"], p["outcome"]) for project in projects for p in project["proposals"])
    return {
        "runs": len(cases),
        "proposals": {f"{confidence} {outcome}": n for (confidence, outcome), n in sorted(outcomes.items())},
        "default_fix_donations": sum(p["default_fix_donations"] for p in projects),
        "verified_fix_donations": sum(p["verified_fix_donations"] for p in projects),
        "same": len([c for c in cases if c["verdict"] == "same"]),
        "unsafe": len([c for c in cases if c["verdict"] == "unsafe"]),
        "broke": len([c for c in cases if c["verdict"] == "broke"]),
    }

"""Accuracy of jaxmem on real JAX projects downloaded from PyPI (issue 7, item 6).

Five measurements, each a section of the output:

1. exactness: findings with and without each speed shortcut (pre-filter and
   blanking through ``JAXMEM_NO_SHORTCUTS=1``; the facts cache cold, filling
   and warm) are identical;
2. recall: the donations the authors wrote are stripped; how many come back
   as JXM001/JXM002/JXM003 for the same parameter, and how many the default
   ``jaxmem-fix`` (and ``--unsafe-fixes``) restores, split by whether the
   call site rebinds the argument from the result;
3. use-after-donation: a read injected after each donating call (directly,
   and through an alias taken before it): how many get JXM101 on that line;
4. fix-then-run: tests and examples the fixer changes, run before and after
   (``_fix_run.py``);
5. precision: JXM001 proposals the authors did not write and JXM101 on the
   unmodified code, against the reviewed sample in
   ``benchmarks/results/review-*.json``; and every JXM003 (no call site, library
   code) on the unmodified and on the stripped code, with whether it names a
   donation the authors wrote.

jaxmem is a black box (its CLI, run from ``.venv/bin``).  Third-party code
lives in ``benchmarks/.cache/`` only.

    .venv/bin/python benchmarks/accuracy.py                 # all packages, writes results/accuracy-DATE.*
    .venv/bin/python benchmarks/accuracy.py --package brax==0.14.2:sdist --skip-run
    .venv/bin/python benchmarks/accuracy.py --package optax==0.2.8:sdist --exactness-only --no-write
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import _jaxmem_cli as jaxmem
from _corpus import project_dir
from _donations import find_donations, inject_reads, injection_sites, line_map, strip_donations
from _report import format_comparison, format_exactness, format_markdown, format_table
from _scoring import (
    confidence_doubts, donated_parameters, donation_status, fixed_point_changes, injected_read_reported,
    recovered_by, refusal_of, restored_in, shortcut_differences, uncalled_proposals,
)

RESULTS = Path(__file__).resolve().parent / "results"
# Outside the repository: ``jaxmem check .`` skips git-ignored folders such as benchmarks/.cache.
WORK = Path(tempfile.gettempdir()) / "jaxmem-accuracy-work"

# (name, version, kind): sdists carry tests and examples; paxml, praxis,
# easydel and tpu-inference publish placeholder sdists, none, or one that
# does not build, so their wheels are read.
PACKAGES = [
    ("flax", "0.12.8", "sdist"), ("optax", "0.2.8", "sdist"), ("equinox", "0.13.8", "sdist"),
    ("brax", "0.14.2", "sdist"), ("dm-haiku", "0.0.17", "sdist"), ("haliax", "1.3", "sdist"),
    ("levanter", "1.1", "sdist"), ("trax", "1.4.1", "sdist"), ("recurrentgemma", "1.0.1", "sdist"),
    ("kauldron", "1.4.2", "sdist"), ("kithara", "0.0.10", "sdist"), ("kfac-jax", "0.0.8", "sdist"),
    ("penzai", "0.2.5", "sdist"), ("fjformer", "0.0.91", "sdist"), ("fedjax", "0.0.17", "sdist"),
    ("paxml", "1.4.0", "wheel"), ("praxis", "1.4.0", "wheel"), ("easydel", "0.3.0", "wheel"),
    ("tpu-inference", "0.32.0", "wheel"),
    # Training code (issue 14): RL agents, trainers and training loops with their tests and examples; few
    # write donations (recall counts only those), their loops feed the fixed point, precision and fix-then-run.
    ("dopamine-rl", "4.1.2", "sdist"), ("jumanji", "1.1.2", "sdist"), ("qdax", "0.5.0", "sdist"),
    ("sbx-rl", "0.28.0", "sdist"), ("mujoco-mjx", "3.17.0", "sdist"), ("evojax", "0.2.17", "sdist"),
    ("jaxline", "0.0.8", "sdist"), ("rlax", "0.1.9", "sdist"), ("jax-md", "0.2.29", "sdist"),
    ("rejax", "0.1.3", "sdist"), ("dm-acme", "0.4.0", "sdist"), ("flaxdiff", "0.2.11", "sdist"),
    ("jaxmarl", "0.2.0", "sdist"), ("learned-optimization", "0.0.1", "sdist"),
]


def log(message: str) -> None:
    print(f"[accuracy {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def python_files(root: Path) -> list[Path]:
    """The ``.py`` files under ``root``, sorted, outside caches."""
    return sorted(p for p in root.rglob("*.py") if p.is_file() and ".jaxmem_cache" not in p.parts)


def fresh_copy(source: Path, name: str) -> Path:
    """A new copy of ``source`` under the work folder (an earlier one is removed)."""
    target = WORK / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".jaxmem_cache", "__pycache__"))
    return target


def read_donations(root: Path) -> tuple[dict[str, list], list[str]]:
    """Donations per relative path, and the files the oracle could not parse."""
    found, unparsable = {}, []
    for path in python_files(root):
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        if "donate" not in text:  # every keyword the oracle reads contains it; libcst metadata is slow
            continue
        try:
            donations = find_donations(text)
        except (SyntaxError, ValueError):  # Python 2 or a template: jaxmem reports JXM900
            unparsable.append(relative)
            continue
        if donations:
            found[relative] = donations
    return found, unparsable


def measure_exactness(root: Path, label: str) -> dict:
    """Section 1: findings of every shortcut setting against the plain run."""
    log(f"{label}: exactness (4 runs of jaxmem check)")
    runs = {}
    started = time.perf_counter()
    runs["default"] = jaxmem.check(root)
    seconds = {"default": time.perf_counter() - started}
    for setting, kwargs in (("no-shortcuts", {"shortcuts": False}), ("cache-fill", {"no_cache": False}),
                            ("cache-warm", {"no_cache": False})):
        started = time.perf_counter()
        runs[setting] = jaxmem.check(root, **kwargs)
        seconds[setting] = time.perf_counter() - started
    shutil.rmtree(root / ".jaxmem_cache", ignore_errors=True)
    differences = {
        setting: shortcut_differences(runs["no-shortcuts"], runs[setting])
        for setting in ("default", "cache-fill", "cache-warm")
    }
    return {"runs": runs, "seconds": {k: round(v, 2) for k, v in seconds.items()}, "differences": differences}


def measure_recall(root: Path, donations: dict[str, list], label: str) -> dict:
    """Section 2: strip the authors' donations; what ``check`` and ``jaxmem-fix`` bring back."""
    stripped = fresh_copy(root, f"{label}-stripped")
    to_stripped = {}
    for relative in donations:
        path = stripped / relative
        original = path.read_text(encoding="utf-8")
        text = strip_donations(original)
        path.write_text(text, encoding="utf-8")
        to_stripped[relative] = line_map(original, text)
    log(f"{label}: recall (check on {len(donations)} stripped files)")
    skipped: list[dict] = []
    findings = jaxmem.check(stripped, skipped=skipped)
    fixed, fixed_point = {}, {}
    for mode, unsafe in (("fix", False), ("unsafe-fix", True)):
        copy = fresh_copy(stripped, f"{label}-{mode}")
        fixed_point[mode] = measure_fixed_point(copy, unsafe, f"{label} {mode}")
        fixed[mode] = {}
        for relative in donations:
            try:
                fixed[mode][relative] = find_donations((copy / relative).read_text(encoding="utf-8"))
            except Exception:
                fixed[mode][relative] = []
    cases = []
    moved_donations = {
        relative: [dataclasses.replace(d, span=tuple(map(to_stripped[relative], d.span))) for d in found]
        for relative, found in donations.items()
    }
    for relative, found in donations.items():
        for donation in found:
            status = donation_status(donation)
            parameters = donated_parameters(donation) if donation.literal else []
            if not parameters:
                cases.append(_case(label, relative, donation, None, None, status, None, {}, "unresolved"))
                continue
            for index, name in parameters:
                moved = dataclasses.replace(donation, span=tuple(map(to_stripped[relative], donation.span)))
                finding = recovered_by(moved, relative, index, name, findings)
                restored = {mode: restored_in(donation, index, name, fixed[mode][relative]) for mode in fixed}
                case = _case(label, relative, donation, index, name, status, finding, restored, "resolved")
                case["refusal"] = None if finding else refusal_of(moved, relative, name, skipped)
                cases.append(case)
    return {"cases": cases, "findings": findings, "fixed_point": fixed_point,
            "uncalled": uncalled_proposals(label, findings, moved_donations)}


def snapshot(root: Path) -> dict[str, str]:
    """The text of every ``.py`` file under ``root``, by relative path."""
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace") for p in python_files(root)}


def measure_fixed_point(copy: Path, unsafe: bool, label: str) -> dict:
    """Run ``jaxmem-fix [--unsafe-fixes] .`` twice on ``copy`` (the second on the first's output, the
    facts cache warm as in a pre-commit hook); the files the first changed and those the second did."""
    before = snapshot(copy)
    started = time.perf_counter()
    first = jaxmem.fix(["."], copy, unsafe=unsafe, no_cache=False)
    after_first = snapshot(copy)
    middle = time.perf_counter()
    second = jaxmem.fix(["."], copy, unsafe=unsafe, no_cache=False)
    after_second = snapshot(copy)
    changes = fixed_point_changes(after_first, after_second)
    shutil.rmtree(copy / ".jaxmem_cache", ignore_errors=True)
    if changes:
        log(f"{label}: a second jaxmem-fix changed {len(changes)} file(s): {', '.join(c['path'] for c in changes)}")
    return {
        "files": len(before), "changed_by_first": sorted(p for p in after_first if after_first[p] != before.get(p)),
        "changed_by_second": changes, "exit": [first.returncode, second.returncode],
        "errors": [r.stderr.strip()[-400:] for r in (first, second) if r.returncode not in (0, 1)],
        "seconds": [round(middle - started, 2), round(time.perf_counter() - middle, 2)],
    }


def _case(label, relative, donation, index, name, status, finding, restored, resolution) -> dict:
    return {
        "package": label, "path": relative, "line": donation.line, "form": donation.form,
        "callee": donation.callee, "keyword": donation.keyword, "spec": donation.spec,
        "function": donation.bound_to, "wrapped": donation.wrapped, "parameter_index": index,
        "parameter": name, "status": status, "resolution": resolution,
        "reported": finding.code if finding else None, "confidence": finding.confidence if finding else None,
        "doubts": confidence_doubts(finding) if finding else [],
        "restored_by_fix": restored.get("fix", False), "restored_by_unsafe_fix": restored.get("unsafe-fix", False),
    }


def measure_injection(root: Path, donations: dict[str, list], label: str) -> dict:
    """Section 3: reads injected after donating calls, directly and through an alias."""
    cases = []
    for through_alias in (False, True):
        variant = "alias" if through_alias else "direct"
        copy = fresh_copy(root, f"{label}-inject-{variant}")
        injected = {}
        for relative, found in donations.items():
            pairs = injection_sites(found, through_alias)
            if not pairs:
                continue
            path = copy / relative
            text, injected[relative] = inject_reads(path.read_text(encoding="utf-8"), pairs, through_alias)
            path.write_text(text, encoding="utf-8")
        if not injected:
            continue
        log(f"{label}: use-after-donation, {variant} ({sum(map(len, injected.values()))} reads)")
        findings = jaxmem.check(copy)
        for relative, injections in injected.items():
            for injection in injections:
                finding = injected_read_reported(injection, relative, findings)
                cases.append({
                    "package": label, "path": relative, "variant": variant, "read_line": injection.line,
                    "call_line": injection.call_line, "name": injection.name, "rebound": injection.rebound,
                    "reported": finding is not None,
                })
    return {"cases": cases}


def precision_candidates(label: str, findings: list, recall_cases: list[dict], donations: dict[str, list]) -> list[dict]:
    """JXM001 on definitions/parameters the authors did not donate, and every JXM101, on unmodified code."""
    candidates = []
    for finding in findings:
        path = finding.path[2:] if finding.path.startswith("./") else finding.path
        if finding.code == "JXM001":
            authored = any(
                recovered_by(d, path, i, n, [finding]) for d in donations.get(path, [])
                for i, n in donated_parameters(d)
            )
            if authored:
                continue
        elif finding.code not in ("JXM101", "JXM104", "JXM105"):
            continue
        candidates.append({
            "package": label, "path": path, "line": finding.line, "code": finding.code,
            "parameter": finding.parameter_name, "confidence": finding.confidence, "message": finding.message,
        })
    return candidates


def apply_review(candidates: list[dict], review: list[dict]) -> dict:
    """Match the candidates with the reviewed cases (keyed by package, path, line, code, parameter)."""
    def key(case):
        return (case["package"], case["path"], case["line"], case["code"], case.get("parameter"))

    reviewed = {key(case): case for case in review}
    current = {key(case) for case in candidates}
    seen = [dict(reviewed[key(c)], **{"confidence": c["confidence"]}) for c in candidates if key(c) in reviewed]
    return {
        "reviewed_still_reported": seen,
        "reviewed_gone": [case for k, case in reviewed.items() if k not in current],
        "unreviewed": [c for c in candidates if key(c) not in reviewed],
    }


def latest_review() -> tuple[Path | None, list[dict]]:
    """The newest ``results/review-*.json`` and its cases."""
    reviews = sorted(RESULTS.glob("review-*.json"))
    if not reviews:
        return None, []
    return reviews[-1], json.loads(reviews[-1].read_text())["cases"]


def measure_package(report: dict, label: str, kind: str, source: Path, *, exactness_only: bool = False) -> None:
    """Sections 1, 2, 3 and the precision candidates of one package (or section 1 only), added to ``report``."""
    root = fresh_copy(source, label)
    donations, unparsable = read_donations(root)
    files = python_files(root)
    report["packages"].append({
        "package": label, "kind": kind, "files": len(files),
        "lines": sum(p.read_text(encoding="utf-8", errors="replace").count("\n") for p in files),
        "donations": sum(map(len, donations.values())),
    })
    report["unparsable"][label] = unparsable
    exactness = measure_exactness(root, label)
    report["exactness"][label] = {
        "seconds": exactness["seconds"], "findings": len(exactness["runs"]["no-shortcuts"]),
        "differences": exactness["differences"],
    }
    if exactness_only:
        return
    report["definitions"][label] = [
        {"path": rel, "line": d.line, "form": d.form, "callee": d.callee, "spec": d.spec,
         "function": d.bound_to, "calls": [asdict(c) for c in d.calls]}
        for rel, found in donations.items() for d in found
    ]
    if donations:
        recall = measure_recall(root, donations, label)
        report["recall"].extend(recall["cases"])
        report["uncalled_stripped"].extend(recall["uncalled"])
        report["fixed_point"][label] = recall["fixed_point"]
        report["injection"].extend(measure_injection(root, donations, label)["cases"])
    else:  # nothing to strip: the fixed point of the project as it is
        report["fixed_point"][label] = {
            mode: measure_fixed_point(fresh_copy(root, f"{label}-{mode}"), unsafe, f"{label} {mode}")
            for mode, unsafe in (("fix", False), ("unsafe-fix", True))
        }
    report["precision_candidates"].extend(
        precision_candidates(label, exactness["runs"]["no-shortcuts"], report["recall"], donations))
    report["uncalled_unmodified"].extend(uncalled_proposals(label, exactness["runs"]["no-shortcuts"], donations))


def check_work_folder(work: Path) -> None:
    """Stop when a folder above ``work`` marks a project root: jaxmem would take every copy under it
    (and anything beside them) as one project's context, which changes the findings and slows every run."""
    for folder in work.resolve().parents:
        for marker in ("pyproject.toml", ".git"):
            if (folder / marker).exists():
                raise SystemExit(f"accuracy.py: {folder / marker} marks {folder} as a project root above the work "
                                 f"folder {work}: remove it or set TMPDIR to a folder outside any project")


def main(argv=None) -> int:
    """Run the benchmark; write ``results/accuracy-DATE.json`` and ``.md``; print the summary table."""
    args = _parser().parse_args(argv)
    check_work_folder(WORK)
    if args.review_only:
        return review_only(Path(args.review_only))
    if args.compare and args.against:
        before, after = (json.loads(Path(f).read_text()) for f in (args.compare, args.against))
        print(format_comparison(before, after))
        return 0
    if args.fix_run_into:
        return fix_run_into(Path(args.fix_run_into), args)
    if args.confirm_run_into:
        return confirm_run_into(Path(args.confirm_run_into), args)
    packages = _packages(args)
    started = time.perf_counter()
    report = {"date": datetime.date.today().isoformat(), "packages": [], "exactness": {}, "recall": [],
              "injection": [], "precision_candidates": [], "unparsable": {}, "definitions": {},
              "fixed_point": {}, "uncalled_unmodified": [], "uncalled_stripped": []}
    for name, version, kind in packages:
        label = f"{name}-{version}"
        try:
            source = project_dir(name, version, kind)
        except Exception as error:  # one missing download does not stop the others
            log(f"{label}: skipped: {error}")
            report["packages"].append({"package": label, "kind": kind, "error": str(error)})
            continue
        try:
            measure_package(report, label, kind, source, exactness_only=args.exactness_only)
        except Exception as error:  # a bug here or in jaxmem on one package does not stop the others
            log(f"{label}: failed: {error!r}")
            report["packages"].append({"package": label, "kind": kind, "error": repr(error)})
        (WORK / "partial-report.json").write_text(json.dumps(report, default=_json))  # to read while it runs
    review_path, review = latest_review()
    report["review"] = {"file": review_path.name if review_path else None,
                        **apply_review(report["precision_candidates"], review)}
    if not args.skip_run and not args.exactness_only:
        from _fix_run import measure_fix_then_run
        report["fix_then_run"] = measure_fix_then_run(packages, max_runs=args.max_runs, timeout=args.run_timeout,
                                                     budget_s=args.run_budget, log=log, work=WORK)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["command"] = " ".join(["python", "benchmarks/accuracy.py", *(argv if argv is not None else sys.argv[1:])])
    print(format_table(report))
    if args.exactness_only:
        print("\n" + "\n".join(format_exactness(report)))
    if args.compare:
        print("\n" + format_comparison(json.loads(Path(args.compare).read_text()), report))
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        stem = RESULTS / f"accuracy-{report['date']}{args.suffix}"
        stem.with_suffix(".json").write_text(json.dumps(report, indent=1, default=_json) + "\n")
        stem.with_suffix(".md").write_text(format_markdown(report))
        log(f"wrote {stem}.json and .md")
    return 0


def _packages(args) -> list:
    """The ``--package`` specs as ``(name, version, kind)``, or the default corpus."""
    return [_package(spec) for spec in args.package] if args.package else PACKAGES


def fix_run_into(results: Path, args) -> int:
    """Run section 4 alone and put it into a finished ``accuracy-DATE.json`` (and its ``.md``)."""
    from _fix_run import measure_fix_then_run

    def measure(packages, report):
        return measure_fix_then_run(packages, max_runs=args.max_runs, timeout=args.run_timeout,
                                    budget_s=args.run_budget, log=log, work=WORK)

    return _section_into(results, "fix_then_run", measure, args)


def confirm_run_into(results: Path, args) -> int:
    """Run confirm-then-fix (section 4b) and put it into a finished ``accuracy-DATE.json`` (and its ``.md``);
    packages measured before and not now keep their rows."""
    from _confirm_run import confirmable, measure_confirm_then_fix, merged_section

    packages = _packages(args)
    ready, skipped = confirmable(packages)
    if not ready:  # an empty section would read as "0 unsafe of 0": say why instead, and keep the file
        print("accuracy.py: no package can be confirmed, so nothing was measured and "
              f"{results} is unchanged:\n  " + "\n  ".join(skipped), file=sys.stderr)
        return 2

    def measure(packages, report):
        fresh = measure_confirm_then_fix(packages, timeout=args.run_timeout, budget_s=args.run_budget, log=log,
                                         work=WORK)
        return merged_section(report.get("confirm_then_fix"), fresh)

    return _section_into(results, "confirm_then_fix", measure, args)


def _section_into(results: Path, key: str, measure, args) -> int:
    """Put ``measure(packages, report)`` into ``results`` under ``key``; rewrite it and its ``.md``."""
    report = json.loads(results.read_text())
    packages = _packages(args)
    started = time.perf_counter()
    report[key] = measure(packages, report)
    report[key]["seconds"] = round(time.perf_counter() - started, 1)
    report[key]["command"] = " ".join(["python", "benchmarks/accuracy.py", *sys.argv[1:]])
    print(format_table(report))
    results.write_text(json.dumps(report, indent=1, default=_json) + "\n")
    results.with_suffix(".md").write_text(format_markdown(report))
    log(f"rewrote {results} and its .md with a new {key} section")
    return 0


def review_only(results: Path) -> int:
    """Apply the newest review to a finished ``accuracy-DATE.json`` and rewrite it and its ``.md``."""
    report = json.loads(results.read_text())
    review_path, review = latest_review()
    report["review"] = {"file": review_path.name if review_path else None,
                        **apply_review(report["precision_candidates"], review)}
    print(format_table(report))
    results.write_text(json.dumps(report, indent=1, default=_json) + "\n")
    results.with_suffix(".md").write_text(format_markdown(report))
    log(f"rewrote {results} and its .md with {review_path}")
    return 0


def _json(value):
    if hasattr(value, "identity"):
        return list(value.identity())
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _package(spec: str) -> tuple[str, str, str]:
    name_version, _, kind = spec.partition(":")
    name, _, version = name_version.partition("==")
    if not version:
        raise SystemExit(f"accuracy.py: --package {spec!r} needs NAME==VERSION[:sdist|wheel]")
    return name, version, kind or "sdist"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", action="append", metavar="NAME==VERSION[:KIND]",
                        help="measure this package instead of the default corpus (repeatable; KIND sdist or wheel)")
    parser.add_argument("--skip-run", action="store_true", help="skip fix-then-run (section 4)")
    parser.add_argument("--exactness-only", action="store_true",
                        help="measure section 1 only (4 runs of jaxmem check per package) and print its "
                             "differences; implies --skip-run")
    parser.add_argument("--max-runs", type=int, default=20,
                        help="most changed test/example files to run before and after; 0: all (default: 20)")
    parser.add_argument("--run-timeout", type=float, default=120, help="seconds per program run (default: 120)")
    parser.add_argument("--run-budget", type=float, default=600,
                        help="start no fix-then-run program once section 4 (applying the fixer included) "
                             "has run this many seconds; 0: no limit (default: 600)")
    parser.add_argument("--fix-run-into", metavar="RESULTS_JSON",
                        help="only run fix-then-run (section 4) and put it into this finished results file")
    parser.add_argument("--confirm-run-into", metavar="RESULTS_JSON",
                        help="only run confirm-then-fix (section 4b: the project's tests under `jaxmem confirm`, "
                             "then `jaxmem-fix --verified`, then the tests again) and put it into this results file")
    parser.add_argument("--review-only", metavar="RESULTS_JSON",
                        help="only apply the newest review file to this finished results file, and rewrite it")
    parser.add_argument("--no-write", action="store_true", help="print the table only; write no results")
    parser.add_argument("--suffix", default="", metavar="TEXT",
                        help="append TEXT to the results' names: results/accuracy-DATE{TEXT}.json (e.g. -after)")
    parser.add_argument("--compare", metavar="RESULTS_JSON",
                        help="also print the headline figures and medium-reason tally of this earlier results "
                             "file beside the new ones (e.g. the committed baseline)")
    parser.add_argument("--against", metavar="RESULTS_JSON",
                        help="with --compare: compare with this finished results file instead of running")
    return parser


if __name__ == "__main__":
    sys.exit(main())

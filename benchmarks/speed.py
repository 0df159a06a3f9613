"""Speed of ``jaxmem check`` at project scale, against flake8 and ruff, on real JAX code (issue 10).

The corpus is the pinned wheels of ``_corpus.PROJECT_PACKAGES`` (about
2,900 files from 18 JAX projects), downloaded on first use and copied into
a temporary project tree (``pyproject.toml`` at its root, outside any git
repository).  In one run, in alternating rounds (median of ``--runs``), it
times three sets:

* **jit-heavy files**: every file of the tree whose text mentions ``jit``
  or ``pmap``;
* **whole projects**: every file of the tree;
* **one changed file**: a jit-heavy training file, changed before each run,
  checked warm as the pre-commit hook runs it (``jaxmem check
  --force-exclude FILE`` from the root), as ``jaxmem check FILE``, as
  ``jaxmem check .`` (a comment appended, then lines inserted at the top,
  which moves every fact of the file), and as the flake8 plugin runs it
  (``flake8 --select JXM FILE``).

For the first two: ``jaxmem check`` with ``--no-cache`` and ``--jobs 1`` or
``2``, with a cold cache (deleted first) and then warm; flake8's defaults
(``-j 1 --isolated``, from a venv with no jaxmem plugin); ``ruff check
--isolated --no-cache`` (default rules, pinned ruff in a side venv) with one
thread and with all.  Wall and CPU seconds, the child's peak memory and the
load average go with each figure.  The figures are printed and written to
``benchmarks/results/speed-DATE.json`` and ``.md`` (``speed-quick-DATE`` for
``--quick``).

    .venv/bin/python benchmarks/speed.py                 # full run, median of 3 rounds
    .venv/bin/python benchmarks/speed.py --quick         # smoke run: 3 projects, 1 round (< 3 min)
    .venv/bin/python benchmarks/speed.py --profile       # cProfile report, results/speed-profile-DATE.md
    .venv/bin/python benchmarks/speed.py --incremental-only --runs 5   # one changed file only
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import _speed_report as report
from _corpus import CACHE, PROJECT_PACKAGES, source_dir
from _measure import Case, run_rounds, summary

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
RESULTS = REPO / "benchmarks" / "results"
BASELINE_VENV = CACHE / "flake8-venv"
RUFF_VENV = CACHE / "ruff-venv"
RUFF_VERSION = "0.17.5"
FLAKE8_DISTS = ("flake8", "pyflakes", "pycodestyle", "mccabe")
QUICK_PACKAGES = [("optax", "0.2.8"), ("equinox", "0.13.8"), ("brax", "0.14.2")]
# A real training loop (pmap, donation, a jitted step): what a developer edits.
CHANGED_FILE = "brax-0.14.2/brax/training/agents/ppo/train.py"
JIT_MENTION = re.compile(r"jit|pmap")
CACHE_DIR = ".jaxmem_cache"


def main(argv=None) -> int:
    """Run the benchmark (or the profile), print and write the results; 0 when every target is met."""
    args = _parser().parse_args(argv)
    argv = list(argv if argv is not None else sys.argv[1:])
    packages = QUICK_PACKAGES if args.quick else PROJECT_PACKAGES
    runs = 1 if args.quick and args.runs is None else (args.runs or 3)
    with tempfile.TemporaryDirectory(prefix="jaxmem-speed-") as folder:
        tree = build_tree(Path(folder) / "project", packages)
        project = python_files(tree)
        changed = args.changed_file or CHANGED_FILE
        if changed not in project:
            raise SystemExit(f"speed.py: the changed file {changed} is not in the corpus; "
                             "pass --changed-file with a path relative to the tree")
        if args.profile:
            from _speed_profile import write_profile

            path = write_profile(tree, jit_heavy(tree, project), project, changed, jaxmem_python=args.python,
                                 results=Path(args.results), top=args.top,
                                 stem=f"speed-profile-{'quick-' if args.quick else ''}{_today()}",
                                 keep=CACHE / "profiles")
            print(f"profile written to {path}")
            return 0
        about = {"command": " ".join([".venv/bin/python", "benchmarks/speed.py", *argv]),
                 "packages": [f"{n}=={v}" for n, v in packages], "quick": args.quick,
                 "incremental_only": args.incremental_only}

        def save(figures: dict) -> None:
            if not args.no_write:
                for path in write_results({**figures, **about}, Path(args.results)):
                    print(f"written: {path}", file=sys.stderr)

        compile_sources(args.python)
        # Written after every round, so an interrupted run keeps the rounds it finished.
        figures = {**measure(tree, project, changed, runs=runs, jaxmem=args.jaxmem,
                             flake8=args.flake8 or baseline_flake8(), ruff=ruff_executable(),
                             plugin_flake8=args.plugin_flake8, after_round=save,
                             incremental_only=args.incremental_only), **about}
    print(report.format_table(figures))
    return 0 if all(f["met"] is not False for f in figures["targets"]) else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", "-n", type=int,
                        help="alternating rounds; the median counts (default: 3, or 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: optax, equinox and brax only, one round (under about 3 minutes)")
    parser.add_argument("--incremental-only", action="store_true",
                        help="only the one-changed-file cases, after one untimed run that warms the cache")
    parser.add_argument("--profile", action="store_true",
                        help="instead of timing, profile the jit-heavy, warm and incremental runs (cProfile)")
    parser.add_argument("--top", type=int, default=20, help="functions per table with --profile (default: 20)")
    parser.add_argument("--changed-file", metavar="PATH",
                        help=f"file changed in the incremental case, relative to the tree (default: {CHANGED_FILE})")
    parser.add_argument("--results", default=str(RESULTS),
                        help="folder for speed-DATE.json and .md (default: benchmarks/results)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--jaxmem", default=str(VENV_BIN / "jaxmem"),
                        help="jaxmem executable (default: .venv/bin/jaxmem)")
    parser.add_argument("--python", default=str(VENV_BIN / "python"),
                        help="Python with jaxmem installed, for --profile (default: .venv/bin/python)")
    parser.add_argument("--plugin-flake8", default=str(VENV_BIN / "flake8"),
                        help="flake8 with the jaxmem plugin (default: .venv/bin/flake8)")
    parser.add_argument("--flake8",
                        help=f"flake8 executable without the jaxmem plugin (default: built in {BASELINE_VENV})")
    return parser


def compile_sources(python: str) -> None:
    """Write the bytecode of jaxmem's own modules, as a regular install does: with an
    editable install and ``PYTHONDONTWRITEBYTECODE`` set (as on the project's CI
    machines) every timed process would otherwise compile about 80 modules again
    (about 0.2 s a run, which the one-changed-file figures would count)."""
    subprocess.run([python, "-m", "compileall", "-q", *(str(REPO / part) for part in
                                                        ("jaxmem", "lint", "codemod", "runtime_check"))],
                   check=True, stdout=subprocess.DEVNULL)


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def build_tree(root: Path, packages) -> Path:
    """Copy each package's ``.py`` files to ``root/NAME-VERSION/`` under one ``pyproject.toml``."""
    root.mkdir(parents=True)
    for name, version in packages:
        shutil.copytree(source_dir(name, version), root / f"{name}-{version}",
                        ignore=shutil.ignore_patterns(".unpacked"))
    (root / "pyproject.toml").write_text('[project]\nname = "speed-corpus"\nversion = "0"\n\n[tool.jaxmem]\n')
    return root


def python_files(tree: Path) -> list[str]:
    """The ``.py`` files under ``tree``, relative to it, sorted."""
    return sorted(str(p.relative_to(tree)) for p in tree.rglob("*.py"))


def mentions_jit(text: str) -> bool:
    """Whether ``text`` mentions ``jit`` or ``pmap`` anywhere (``jax.jit``, ``filter_jit``, a comment)."""
    return JIT_MENTION.search(text) is not None


def jit_heavy(tree: Path, files: list[str]) -> list[str]:
    """The files of ``files`` (relative to ``tree``) that mention jit or pmap."""
    return [f for f in files if mentions_jit((tree / f).read_text(encoding="utf-8", errors="replace"))]


def count_lines(tree: Path, files: list[str]) -> int:
    """Lines in ``files`` (relative to ``tree``)."""
    total = 0
    for f in files:
        with open(tree / f, "rb") as handle:
            total += sum(1 for _ in handle)
    return total


def measure(tree: Path, project: list[str], changed: str, *, runs: int, jaxmem: str, flake8: str,
            ruff: str, plugin_flake8: str, after_round=None, incremental_only: bool = False) -> dict:
    """Time every case on the tree; return the figures (medians, targets, findings check).

    ``after_round(figures)``, if given, gets the figures of the rounds done so far after each round.
    With ``incremental_only``, only the one-changed-file cases run, after one untimed warm-up
    run of ``jaxmem check .``.
    """
    if incremental_only:
        subprocess.run([jaxmem, "check", "--format", "json", "."], cwd=tree, capture_output=True, check=False)
    load_before = os.getloadavg()
    heavy = jit_heavy(tree, project)
    sets = {
        report.JIT_HEAVY: {"files": len(heavy), "lines": count_lines(tree, heavy),
                           "description": "Every file of the corpus that mentions `jit` or `pmap`, "
                                          "passed explicitly from the tree's root."},
        report.PROJECT: {"files": len(project), "lines": count_lines(tree, project),
                         "description": "Every file of the corpus (all projects together), passed "
                                        "explicitly from the tree's root."},
        report.INCREMENTAL: {"files": 1, "lines": count_lines(tree, [changed]),
                             "description": f"`{changed}` changed (a comment appended) before each run, "
                                            f"in the {len(project)}-file tree whose cache the whole-project "
                                            "runs just warmed; from the tree's root."},
    }
    cases = incremental_cases(tree, changed, jaxmem, plugin_flake8, ruff)
    if incremental_only:
        sets = {report.INCREMENTAL: sets[report.INCREMENTAL]}
    else:
        cases = (set_cases(report.JIT_HEAVY, tree, heavy, jaxmem, flake8, ruff)
                 + set_cases(report.PROJECT, tree, project, jaxmem, flake8, ruff) + cases)
    versions = _versions(flake8, ruff)

    def figures(rounds_done: int) -> dict:
        results: dict = {}
        for case in cases:
            results.setdefault(case.group, {})[case.name] = summary(case.samples)
        return {
            "date": _today(),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "load_before": [round(x, 2) for x in load_before],
                        "load_after": [round(x, 2) for x in os.getloadavg()]},
            "versions": versions,
            "runs": rounds_done,
            "sets": sets,
            "results": results,
            "targets": report.target_figures(results),
            "findings": {group: findings_check([c for c in cases if c.group == group])
                         for group in (report.JIT_HEAVY, report.PROJECT) if group in sets},
            "commands": {f"{c.group} / {c.name}": _env_shown(c.env) + _shown(c.command, tree) for c in cases},
        }

    run_rounds(cases, runs, progress=lambda line: print(line, file=sys.stderr, flush=True),
               after_round=None if after_round is None else lambda done: after_round(figures(done)))
    return figures(runs)


def set_cases(group: str, tree: Path, files: list[str], jaxmem: str, flake8: str, ruff: str) -> list[Case]:
    """jaxmem (no cache, one and two jobs, cold, warm), flake8 and ruff on ``files``."""
    root = str(tree)
    check = [jaxmem, "check", "--format", "json"]
    one_thread = {**os.environ, "RAYON_NUM_THREADS": "1"}
    ruff_cmd = [ruff, "check", "--isolated", "--no-cache", "--exit-zero", "--quiet", *files]
    return [
        Case(group, report.NO_CACHE_1, [*check, "--no-cache", "--jobs", "1", *files], root),
        Case(group, report.FLAKE8, [flake8, "-j", "1", "--isolated", "--select", "E,F,W,C90", *files], root),
        Case(group, report.RUFF_1, ruff_cmd, root, env=one_thread),
        Case(group, report.NO_CACHE_2, [*check, "--no-cache", "--jobs", "2", *files], root),
        Case(group, report.COLD, [*check, "--jobs", "1", *files], root,
             prepare=lambda _round: shutil.rmtree(tree / CACHE_DIR, ignore_errors=True)),
        Case(group, report.WARM, [*check, "--jobs", "1", *files], root),
        Case(group, report.RUFF_ALL, ruff_cmd, root),
    ]


def incremental_cases(tree: Path, changed: str, jaxmem: str, plugin_flake8: str, ruff: str) -> list[Case]:
    """One changed file checked warm: the pre-commit hook, ``jaxmem check FILE``, the flake8 plugin."""
    path = tree / changed
    original = path.read_text(encoding="utf-8")
    edits = iter(range(1_000_000))

    def change(round_number: int) -> None:
        path.write_text(original + f"\n# changed by speed.py (round {round_number}, edit {next(edits)})\n",
                        encoding="utf-8")

    moves = iter(range(1, 1_000_000))

    def move(round_number: int) -> None:
        # Every line of the file moves down, by one more line each round: its facts differ
        # from those of the run before, so no stored join can serve.
        lines = next(moves)
        path.write_text(f"# changed by speed.py (round {round_number}, edit {next(edits)})\n" * lines + original,
                        encoding="utf-8")

    root = str(tree)
    group = report.INCREMENTAL
    project = [jaxmem, "check", "--format", "json", "."]
    return [
        Case(group, report.HOOK, [jaxmem, "check", "--force-exclude", changed], root, prepare=change),
        Case(group, report.CHECK_FILE, [jaxmem, "check", changed], root, prepare=change),
        # issue 17: the whole project warm, one file changed (the join of every file's facts)
        Case(group, report.CHECK_PROJECT, project, root, prepare=change),
        # "./": a run shape of its own, so the case above keeps the stored join of its own last run
        Case(group, report.CHECK_PROJECT_MOVED, [*project[:-1], "./"], root, prepare=move),
        Case(group, report.FLAKE8_PLUGIN, [plugin_flake8, "--select", "JXM", changed], root, prepare=change),
        Case(group, report.RUFF_FILE, [ruff, "check", "--isolated", "--no-cache", "--exit-zero", changed], root,
             prepare=change),
    ]


def findings_check(cases: list[Case]) -> dict:
    """Whether every jaxmem variant (no cache, two jobs, cold, warm) reported the same findings."""
    outputs = {c.name: json.loads(c.output)["findings"] for c in cases if c.name.startswith("jaxmem")}
    first = next(iter(outputs.values()), [])
    counts: dict[str, int] = {}
    for finding in first:
        counts[finding["code"]] = counts.get(finding["code"], 0) + 1
    return {"identical": all(found == first for found in outputs.values()), "counts": dict(sorted(counts.items()))}


def _env_shown(env: dict | None) -> str:
    """The variables ``env`` sets beyond this process's environment, as a shell prefix."""
    changed = {k: v for k, v in (env or {}).items() if os.environ.get(k) != v}
    return "".join(f"{k}={v} " for k, v in sorted(changed.items()))


def _shown(command: list[str], tree: Path) -> str:
    """``command`` for the report: one FILES for a file list, executables relative to the repository."""
    files = {part for part in command if part.endswith(".py") and (tree / part).is_file()}
    shown: list[str] = []
    for part in command:
        if part in files and len(files) > 1:
            if shown[-1:] != ["FILES"]:
                shown.append("FILES")
        else:
            shown.append(os.path.relpath(part, REPO) if os.path.isabs(part) else part)
    return " ".join(shown)


def write_results(figures: dict, folder: Path) -> list[Path]:
    """Write ``speed-DATE.json`` and ``speed-DATE.md`` into ``folder``; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    # A smoke run never overwrites the figures of a full one.
    stem = folder / (f"speed-{'quick-' if figures.get('quick') else ''}"
                     f"{'incremental-' if figures.get('incremental_only') else ''}{figures['date']}")
    json_path, md_path = stem.with_suffix(".json"), stem.with_suffix(".md")
    json_path.write_text(json.dumps(figures, indent=2) + "\n")
    md_path.write_text(report.format_markdown(figures))
    return [json_path, md_path]


def _venv_tool(venv: Path, tool: str, pins: list[str]) -> str:
    """``venv/bin/tool``, (re)creating ``venv`` with exactly ``pins`` when it holds anything else."""
    executable = venv / "bin" / tool
    marker = venv / "pins.txt"
    if not executable.exists() or not marker.exists() or marker.read_text().split() != pins:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *pins],
                                 capture_output=True, text=True)
        if install.returncode != 0:
            raise SystemExit(f"speed.py: could not install {' '.join(pins)} into {venv}: "
                             f"{install.stderr.strip()[-500:]}; check access to PyPI")
        marker.write_text("\n".join(pins) + "\n")
    return str(executable)


def baseline_flake8() -> str:
    """A flake8 with only its default plugins, at ``.venv``'s versions, in ``benchmarks/.cache``.

    flake8 runs every installed plugin whatever ``--select`` says, and
    ``.venv`` holds jaxmem's, so the baseline needs a venv of its own.
    """
    flake8 = _venv_tool(BASELINE_VENV, "flake8", [f"{d}=={metadata.version(d)}" for d in FLAKE8_DISTS])
    plugins = subprocess.run([flake8, "--version"], capture_output=True, text=True).stdout
    if "jaxmem" in plugins:
        raise SystemExit(f"speed.py: {flake8} loads the jaxmem plugin; delete {BASELINE_VENV} and rerun")
    return flake8


def ruff_executable() -> str:
    """ruff, pinned to ``RUFF_VERSION``, in a venv of its own under ``benchmarks/.cache``."""
    return _venv_tool(RUFF_VENV, "ruff", [f"ruff=={RUFF_VERSION}"])


def _versions(flake8: str, ruff: str) -> dict:
    versions = {"python": platform.python_version()}
    for dist in ("jaxmem", "libcst", *FLAKE8_DISTS):
        versions[dist] = metadata.version(dist)
    versions["ruff"] = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.split()[-1]
    versions["baseline flake8 --version"] = subprocess.run(
        [flake8, "--version"], capture_output=True, text=True).stdout.strip()
    return versions


if __name__ == "__main__":
    sys.exit(main())

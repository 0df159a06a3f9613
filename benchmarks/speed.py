"""Speed of ``jaxmem check`` against flake8's default checks, on real JAX code.

The corpus is the pinned wheels of ``_corpus.DEFAULT_PACKAGES`` (flax,
optax, equinox and JAX itself), downloaded on first use.  On the same file
list, single process, it times (best of ``--runs`` wall-clock runs, each a
subprocess):

* ``jaxmem check --no-cache --jobs 1 --format json FILES``;
* ``flake8 -j 1 --isolated --select E,F,W,C90 FILES`` (pyflakes, pycodestyle,
  mccabe: flake8's defaults), from a separate venv holding only flake8 and
  its default plugins at the versions of ``.venv``, because flake8 runs every
  installed plugin whatever ``--select`` says, and ``.venv`` has jaxmem's;
* ``libcst.parse_module`` over every file, as a second reference.

The target is ``flake8 seconds / jaxmem seconds >= 2``.

    .venv/bin/python benchmarks/speed.py                     # table
    .venv/bin/python benchmarks/speed.py --runs 1 --json benchmarks/.cache/speed.json
    .venv/bin/python benchmarks/speed.py --profile           # cProfile of jaxmem's analysis only
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

from _corpus import CACHE, DEFAULT_PACKAGES, corpus

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
BASELINE_VENV = CACHE / "flake8-venv"
FLAKE8_DISTS = ("flake8", "pyflakes", "pycodestyle", "mccabe")
TARGET_RATIO = 2.0

_PARSE_ALL = """
import sys, libcst
for path in sys.stdin.read().split("\\n"):
    if path:
        with open(path, encoding="utf-8") as f:
            libcst.parse_module(f.read())
"""


def main(argv=None) -> int:
    """Run the benchmark (or the profile) and print the results; exit 1 when the target is missed."""
    args = _parser().parse_args(argv)
    files = [_relative(p) for p in corpus(_packages(args.package))]
    if args.profile:
        profile(files, top=args.top)
        return 0
    figures = measure(files, runs=args.runs, jaxmem=args.jaxmem, flake8=args.flake8 or baseline_flake8())
    figures["command"] = " ".join(["python", "benchmarks/speed.py", *(argv if argv is not None else sys.argv[1:])])
    figures["packages"] = [f"{n}=={v}" for n, v in _packages(args.package)]
    print(format_table(figures))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        print(f"figures written to {args.json}")
    return 0 if figures["ratio"] >= TARGET_RATIO else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", "-n", type=int, default=3,
                        help="wall-clock runs per tool; the best counts (default: 3)")
    parser.add_argument("--json", metavar="OUT", help="also write the figures to OUT as JSON")
    parser.add_argument("--profile", action="store_true",
                        help="only profile jaxmem's analysis in-process (cProfile) and print the hot spots")
    parser.add_argument("--top", type=int, default=25, help="functions to list with --profile (default: 25)")
    parser.add_argument("--package", action="append", metavar="NAME==VERSION",
                        help="benchmark this wheel instead of the default corpus (repeatable)")
    parser.add_argument("--jaxmem", default=str(VENV_BIN / "jaxmem"),
                        help="jaxmem executable (default: .venv/bin/jaxmem)")
    parser.add_argument("--flake8",
                        help=f"flake8 executable without the jaxmem plugin (default: built in {BASELINE_VENV})")
    return parser


def _packages(specs) -> list[tuple[str, str]]:
    if not specs:
        return list(DEFAULT_PACKAGES)
    pairs = []
    for spec in specs:
        name, sep, version = spec.partition("==")
        if not sep or not name or not version:
            raise SystemExit(f"speed.py: --package {spec!r} must look like NAME==VERSION, e.g. optax==0.2.8")
        pairs.append((name, version))
    return pairs


def _relative(path: Path) -> str:
    # Short relative paths keep the command lines (about 900 files) small.
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def measure(files: list[str], *, runs: int, jaxmem: str, flake8: str) -> dict:
    """Time jaxmem, flake8 and libcst's parser on ``files`` (run from the repository root)."""
    lines = sum(_count_lines(REPO / f) for f in files)
    load_before = os.getloadavg()
    jaxmem_cmd = [jaxmem, "check", "--no-cache", "--jobs", "1", "--format", "json", *files]
    flake8_cmd = [flake8, "-j", "1", "--isolated", "--select", "E,F,W,C90", *files]
    parse_cmd = [str(VENV_BIN / "python"), "-c", _PARSE_ALL]
    jaxmem_times, jaxmem_out = _best_of(runs, jaxmem_cmd, ok_codes=(0, 1))
    flake8_times, _ = _best_of(runs, flake8_cmd, ok_codes=(0, 1))
    parse_times, _ = _best_of(runs, parse_cmd, ok_codes=(0,), stdin="\n".join(files))
    report = json.loads(jaxmem_out)
    by_code = collections.Counter(f["code"] for f in report["findings"])
    results = {
        "jaxmem check": _tool(jaxmem_cmd[:7] + ["FILES"], jaxmem_times, lines),
        "flake8 defaults": _tool(flake8_cmd[:6] + ["FILES"], flake8_times, lines),
        "libcst.parse_module": _tool(["python", "-c", "libcst.parse_module(...) for each file"], parse_times, lines),
    }
    return {
        "date": datetime.date.today().isoformat(),
        "versions": _versions(flake8),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in os.getloadavg()]},
        "files": len(files),
        "lines": lines,
        "runs": runs,
        "results": results,
        "ratio": round(min(flake8_times) / min(jaxmem_times), 2),
        "target_ratio": TARGET_RATIO,
        "prefilter": prefilter_counts(files),
        "findings_by_code": dict(sorted(by_code.items())),
        "skipped_donations": len(report.get("skipped", [])),
    }


def _best_of(runs: int, command: list[str], *, ok_codes, stdin: str | None = None) -> tuple[list[float], str]:
    times, output = [], ""
    for _ in range(max(runs, 1)):
        start = time.perf_counter()
        result = subprocess.run(command, cwd=REPO, input=stdin, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if result.returncode not in ok_codes:
            raise SystemExit(
                f"speed.py: {command[0]} exited {result.returncode}: {result.stderr.strip()[-1000:]}"
            )
        output = result.stdout
    return times, output


def _tool(command: list[str], times: list[float], lines: int) -> dict:
    best = min(times)
    return {"command": " ".join(command), "seconds": round(best, 2), "all_seconds": [round(t, 2) for t in times],
            "lines_per_s": round(lines / best)}


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def prefilter_counts(files: list[str]) -> dict:
    """How many files jaxmem's textual pre-filter skips and how many it analyses fully.

    Mirrors ``jaxmem.api``: the hints (names other files jit) come from all files of the run.
    """
    from jaxmem.lint import engine
    from jaxmem.settings import Settings

    settings = Settings()
    texts = {f: (REPO / f).read_text(encoding="utf-8") for f in files}
    hints = engine.project_hints(texts) if hasattr(engine, "project_hints") else frozenset()
    analysed = analysed_lines = 0
    for text in texts.values():
        if engine.might_involve_jit(text, settings, hints):
            analysed += 1
            analysed_lines += text.count("\n")
    return {"analysed": analysed, "skipped": len(files) - analysed, "analysed_lines": analysed_lines,
            "hints": len(hints)}


def baseline_flake8() -> str:
    """A flake8 with only its default plugins, at ``.venv``'s versions, in ``benchmarks/.cache``."""
    flake8 = BASELINE_VENV / "bin" / "flake8"
    pins = [f"{d}=={metadata.version(d)}" for d in FLAKE8_DISTS]
    marker = BASELINE_VENV / "pins.txt"
    if not flake8.exists() or not marker.exists() or marker.read_text().split() != pins:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(BASELINE_VENV)], check=True)
        install = subprocess.run([str(BASELINE_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", *pins],
                                 capture_output=True, text=True)
        if install.returncode != 0:
            raise SystemExit(f"speed.py: could not install {' '.join(pins)} into {BASELINE_VENV}: "
                             f"{install.stderr.strip()[-500:]}")
        marker.write_text("\n".join(pins) + "\n")
    plugins = subprocess.run([str(flake8), "--version"], capture_output=True, text=True).stdout
    if "jaxmem" in plugins:
        raise SystemExit(f"speed.py: {flake8} loads the jaxmem plugin; delete {BASELINE_VENV} and rerun")
    return str(flake8)


def _versions(flake8: str) -> dict:
    versions = {"python": platform.python_version()}
    for dist in ("jaxmem", "libcst", *FLAKE8_DISTS):
        versions[dist] = metadata.version(dist)
    versions["baseline flake8 --version"] = subprocess.run(
        [flake8, "--version"], capture_output=True, text=True).stdout.strip()
    return versions


def format_table(figures: dict) -> str:
    """The results as a plain-text table with the ratio, pre-filter counts and findings."""
    rows = [f"{'tool':<22}{'files':>7}{'lines':>9}{'seconds':>10}{'lines/s':>10}"]
    for name, tool in figures["results"].items():
        rows.append(f"{name:<22}{figures['files']:>7}{figures['lines']:>9}{tool['seconds']:>10.2f}"
                    f"{tool['lines_per_s']:>10}")
    status = "meets" if figures["ratio"] >= figures["target_ratio"] else "misses"
    pre = figures["prefilter"]
    rows += [
        "",
        f"ratio flake8/jaxmem: {figures['ratio']:.2f} ({status} the target >= {figures['target_ratio']})",
        f"best of {figures['runs']} run(s); load average before {figures['machine']['load_before']}, "
        f"after {figures['machine']['load_after']} on {figures['machine']['cpus']} CPUs",
        f"pre-filter: {pre['analysed']} file(s) ({pre['analysed_lines']} lines) analysed fully, "
        f"{pre['skipped']} skipped",
        "findings: " + (", ".join(f"{c} {n}" for c, n in figures["findings_by_code"].items()) or "none")
        + f"; {figures['skipped_donations']} donation(s) not analysed",
    ]
    return "\n".join(rows)


def profile(files: list[str], *, top: int = 25) -> None:
    """Run ``jaxmem.api.check_paths`` in-process under cProfile and print the hot spots."""
    from jaxmem.api import check_paths

    os.chdir(REPO)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    reports = check_paths(files, use_cache=False)
    profiler.disable()
    elapsed = time.perf_counter() - start
    findings = sum(len(r.findings) for r in reports)
    print(f"{len(files)} files, {findings} findings, {elapsed:.1f} s under the profiler\n")
    own_code = "|".join(str(REPO / d) + os.sep for d in ("jaxmem", "lint", "codemod"))
    views = (("cumulative", "by cumulative time", None), ("tottime", "by own time", None),
             ("cumulative", "in jaxmem's own code, by cumulative time", own_code),
             ("tottime", "in jaxmem's own code, by own time", own_code))
    for order, title, only in views:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats(order)
        stats.print_stats(*([only] if only else []), top)
        text = out.getvalue().replace(sysconfig.get_paths()["purelib"] + os.sep, "")
        text = text.replace(str(REPO) + os.sep, "")
        print(f"== top {top} {title} ==")
        print(text[text.find("   ncalls"):].rstrip() + "\n")


if __name__ == "__main__":
    sys.exit(main())

"""cProfile of ``jaxmem check`` on the speed benchmark's tree, written as Markdown tables.

Each target runs in a fresh process (``jaxmem.cli.main`` under cProfile,
imports included, since they count in a one-file run): the jit-heavy files
without cache, the whole project warm, and one changed file warm as the
pre-commit hook runs it.
"""

from __future__ import annotations

import os
import pstats
import subprocess
import sysconfig
import time
from collections import defaultdict
from pathlib import Path

# The analysis of each file runs on a large-stack thread (jaxmem.deep.call_deep), which a
# profiler enabled on the main thread does not see: each such call gets its own profiler,
# the main one pauses while it waits, and the stats are merged.
_DRIVER = """
import cProfile, pstats, sys
out, args = sys.argv[1], sys.argv[2:]
profiler = cProfile.Profile()
profiler.enable()
threads = []
try:
    import jaxmem.deep as deep
    direct = deep.call_deep

    def profiled(function, *a, **k):
        if getattr(deep._state, "deep", False):  # already on such a thread, and profiled
            return function(*a, **k)

        def run(*a2, **k2):
            mine = cProfile.Profile()
            threads.append(mine)
            mine.enable()
            try:
                return function(*a2, **k2)
            finally:
                mine.disable()
        profiler.disable()
        try:
            return direct(run, *a, **k)
        finally:
            profiler.enable()

    deep.call_deep = profiled  # before jaxmem.api imports it
    from jaxmem.cli import main
    main(args)
finally:
    profiler.disable()
    stats = pstats.Stats(profiler)
    for mine in threads:
        stats.add(mine)
    stats.dump_stats(out)
"""


def profile_command(python: str, args: list[str], cwd: Path, out: Path) -> float:
    """Run ``jaxmem ARGS`` under cProfile in a fresh process; return its wall seconds."""
    out.unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run([python, "-c", _DRIVER, str(out), *args], cwd=cwd, capture_output=True, text=True)
    if not out.exists():
        raise SystemExit(f"speed.py: profiling jaxmem {' '.join(args[:3])} failed: {done.stderr.strip()[-1000:]}")
    return time.perf_counter() - start


def _short(filename: str) -> str:
    for prefix in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]):
        if filename.startswith(prefix + os.sep):
            return filename[len(prefix) + 1:]
    return filename


def _label(key) -> str:
    filename, line, name = key
    if filename == "~":
        return f"`{name}`"
    return f"`{name}` ({_short(filename)}:{line})"


def markdown_tables(stats_file: Path, top: int) -> tuple[float, list[str]]:
    """The profile's total own time, and Markdown: own time by file, top functions by own and cumulative time."""
    stats = pstats.Stats(str(stats_file)).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    # The outermost call's cumulative time is the whole run; own times sum to a bit less.
    total = max(max(ct for _, _, _, ct, _ in stats.values()), sum(tt for _, _, tt, _, _ in stats.values())) or 1e-9
    by_file: dict[str, float] = defaultdict(float)
    for (filename, _, name), (_, _, tt, _, _) in stats.items():
        by_file[_short(filename) if filename != "~" else "built-ins (C)"] += tt
    lines = ["Own time by file:", "", "| file | own s | share |", "|---|---|---|"]
    for filename, tt in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| {filename} | {tt:.2f} | {tt / total:.0%} |")
    for title, index in (("own", 2), ("cumulative", 3)):
        lines += ["", f"Top {top} functions by {title} time:", "",
                  "| function | calls | own s | own share | cumulative s | cumulative share |",
                  "|---|---|---|---|---|---|"]
        ranked = sorted(stats.items(), key=lambda kv: -kv[1][index])[:top]
        for key, (_, calls, tt, ct, _) in ranked:
            lines.append(f"| {_label(key)} | {calls} | {tt:.2f} | {tt / total:.0%} | {ct:.2f} | {ct / total:.0%} |")
    return total, lines


def write_profile(tree: Path, heavy: list[str], project: list[str], changed: str, *, jaxmem_python: str,
                  results: Path, top: int, stem: str, keep: Path) -> Path:
    """Profile the three targets on ``tree`` and write ``results/STEM.md``; the raw profiles stay in ``keep/STEM/``."""
    load = os.getloadavg()
    sections = []
    out = keep / stem
    out.mkdir(parents=True, exist_ok=True)
    check = ["check", "--format", "json", "--jobs", "1"]
    targets = [("jit-heavy files, no cache", len(heavy), [*check, "--no-cache", *heavy], None)]
    # Warm the cache with an unprofiled whole-project run first.
    targets.append(("whole project, warm cache", len(project), [*check, *project],
                    lambda: subprocess.run([jaxmem_python, "-m", "jaxmem.cli", "check", "--jobs", "2", *project],
                                           cwd=tree, capture_output=True)))
    path = tree / changed
    targets.append((f"one changed file, warm (pre-commit hook: jaxmem check --force-exclude {changed})",
                    1, ["check", "--force-exclude", changed],
                    lambda: path.write_text(path.read_text() + "\n# changed for the profile\n")))
    for index, (title, files, args, before) in enumerate(targets):
        if before is not None:
            before()
        run_load = os.getloadavg()[0]
        seconds = profile_command(jaxmem_python, args, tree, out / f"{index}.prof")
        total, tables = markdown_tables(out / f"{index}.prof", top)
        sections += [f"## {title}", "",
                     f"{files} file(s); {seconds:.2f} s wall "
                     f"under the profiler, {total:.2f} s profiled (shares below are of this); load average (1 min) "
                     f"{run_load:.2f} at the start.", "", *tables, ""]
    results.mkdir(parents=True, exist_ok=True)
    target = results / f"{stem}.md"
    header = [f"# jaxmem speed profile ({stem})", "",
              "Command: `.venv/bin/python benchmarks/speed.py --profile` (cProfile of `jaxmem.cli.main`, "
              "which calls `jaxmem.api.check_paths`, in a fresh process per target; imports included).", "",
              f"Load average (1, 5, 15 min) at the start: {[round(x, 2) for x in load]}.", ""]
    target.write_text("\n".join(header + sections))
    return target

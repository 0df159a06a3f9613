"""Every finding of ``jaxmem check`` on the unmodified code of the accuracy corpus,
and how two runs differ: the corpus-wide figures of the session notes.

Run it once per jaxmem version, then compare::

    python benchmarks/corpus_findings.py --out /tmp/before.jsonl --jaxmem OLD/.venv/bin/jaxmem \\
        --packages-of benchmarks/results/accuracy-2026-12-01-s4-a.json \\
        --packages-of benchmarks/results/accuracy-2026-12-01-s4-b.json \\
        --packages-of benchmarks/results/accuracy-2026-12-01-s5-c.json
    python benchmarks/corpus_findings.py --out /tmp/after.jsonl --packages-of ...   # this checkout
    python benchmarks/corpus_findings.py --compare /tmp/before.jsonl /tmp/after.jsonl

The packages are those an accuracy results file was run on (downloaded as it
did, into ``benchmarks/.cache``).  Each line of ``--out`` is one finding of
``jaxmem check --format json --no-cache`` run at the project's root, with its
package.  ``--compare`` prints the findings per code and confidence in both
runs, then every finding whose confidence changed (or that appeared or went).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from _corpus import project_dir

HERE = Path(__file__).resolve().parent


def packages_of(results: Path) -> list[tuple[str, str, str]]:
    """``(name, version, kind)`` of every package an accuracy results file covers."""
    out = []
    for entry in json.loads(results.read_text())["packages"]:
        name, version = entry["package"].rsplit("-", 1)
        out.append((name, version, entry["kind"]))
    return out


def run(jaxmem: str, packages: list[tuple[str, str, str]], out: Path) -> None:
    """Every finding of ``jaxmem check`` on each package, one JSON object a line."""
    with out.open("w") as sink:
        for name, version, kind in packages:
            root = project_dir(name, version, kind)
            done = subprocess.run([jaxmem, "check", "-q", "--no-cache", "--format", "json", "."], cwd=root,
                                  capture_output=True, text=True)
            try:
                findings = json.loads(done.stdout)["findings"]
            except (json.JSONDecodeError, KeyError):
                sys.exit(f"corpus_findings.py: jaxmem check failed in {root}: {done.stderr[-500:]}")
            for finding in findings:
                sink.write(json.dumps({**finding, "package": f"{name}-{version}"}) + "\n")
            counts = Counter(f["confidence"] for f in findings)
            print(f"{name}-{version}: {dict(counts)}", file=sys.stderr)


def _load(path: Path) -> dict[tuple, dict]:
    findings = {}
    for line in path.read_text().splitlines():
        f = json.loads(line)
        key = (f["package"], f["path"], f.get("cell"), f["line"], f["col"], f["code"], f.get("function"),
               json.dumps(f.get("parameter")))
        findings[key] = f
    return findings


def compare(before: Path, after: Path) -> None:
    """Counts per code and confidence, then each finding whose confidence changed."""
    old, new = _load(before), _load(after)
    counts_old = Counter((f["code"], f["confidence"]) for f in old.values())
    counts_new = Counter((f["code"], f["confidence"]) for f in new.values())
    for code, confidence in sorted(set(counts_old) | set(counts_new)):
        print(f"{code} {confidence}: {counts_old[code, confidence]} -> {counts_new[code, confidence]}")
    print("changed:")
    for key in sorted(set(old) | set(new), key=lambda k: tuple(str(part) for part in k)):
        was = old[key]["confidence"] if key in old else None
        now = new[key]["confidence"] if key in new else None
        if was != now:
            package, path, cell, line, _, code, function, parameter = key
            where = f"{path}:{line}" if cell is None else f"{path}:cell {cell}:{line}"
            print(f"  {package} {where} {code} {function} {parameter}: {was} -> {now}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write every finding here (JSON lines)")
    parser.add_argument("--packages-of", type=Path, action="append", default=[], metavar="RESULTS_JSON",
                        help="the packages of this accuracy results file (repeatable)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="of those packages, only this one (repeatable; e.g. flax)")
    parser.add_argument("--jaxmem", default=str(Path(sys.executable).parent / "jaxmem"),
                        help="the jaxmem executable to run (default: this interpreter's)")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"),
                        help="compare two --out files instead of running")
    args = parser.parse_args(argv)
    if args.compare:
        compare(*args.compare)
        return 0
    if args.out is None or not args.packages_of:
        parser.error("give --out and at least one --packages-of (or --compare BEFORE AFTER)")
    packages = [p for results in args.packages_of for p in packages_of(results)
                if not args.only or p[0] in args.only]
    run(args.jaxmem, packages, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

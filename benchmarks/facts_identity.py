"""Are the facts of every file the same before and after a change to the analysis?
(issue 17 item 7: every speed shortcut exact.)

Writes one line per ``.py`` file under each ROOT: the file's path and a digest
of ``repr(engine.facts_for_file(...))``, with the project's settings and the
pre-filter's hints over all of ROOT's files, as a run from ROOT computes them;
then the CPU seconds the facts took.  Run it with each version's interpreter
and ``PYTHONHASHSEED=0`` (sets print in hash order), then compare::

    PYTHONHASHSEED=0 OLD/.venv/bin/python benchmarks/facts_identity.py --out /tmp/old.tsv ROOT...
    PYTHONHASHSEED=0 .venv/bin/python benchmarks/facts_identity.py --out /tmp/new.tsv ROOT...
    python benchmarks/facts_identity.py --compare /tmp/old.tsv /tmp/new.tsv

The analysis runs on a thread with a large stack, as ``jaxmem check`` runs it.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path


def digests(roots: list[Path]) -> tuple[list[tuple[str, str]], float]:
    """``(path, digest of the facts' repr)`` for every file under ``roots``, and the CPU seconds."""
    from jaxmem.config import load_config
    from jaxmem.deep import call_deep
    from jaxmem.lint import engine

    rows, cpu = [], 0.0
    for root in roots:
        settings = load_config([str(root)]).settings
        texts = {str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
                 for p in sorted(root.rglob("*.py"))}
        hints = engine.project_hints(texts)
        for path, text in texts.items():
            start = time.process_time()
            facts = call_deep(engine.facts_for_file, path, text, settings, hints)
            cpu += time.process_time() - start
            rows.append((f"{root.name}/{path}", hashlib.sha256(repr(facts).encode()).hexdigest()[:16]))
    return rows, cpu


def compare(old: Path, new: Path) -> int:
    """Print the files whose facts differ (or that only one side has); 1 when any do."""
    def load(path: Path) -> dict[str, str]:
        return dict(line.split("\t") for line in path.read_text().splitlines() if not line.startswith("#"))

    before, after = load(old), load(new)
    differ = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    for path in differ:
        print(f"differs: {path}")
    print(f"{len(before)} files before, {len(after)} after, {len(differ)} differ")
    return 1 if differ else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, help="write the digests here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.roots or not args.out:
        parser.error("give ROOT... and --out, or --compare OLD NEW")
    rows, cpu = digests(args.roots)
    args.out.write_text("".join(f"{path}\t{digest}\n" for path, digest in rows) + f"# cpu\t{cpu:.2f}\n")
    print(f"{len(rows)} files, facts in {cpu:.2f} CPU s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Warm incremental runs report what runs without cache report, on real code (issue 17 item 3).

Builds the quick corpus of ``speed.py`` (optax, equinox, brax) in a
temporary project, then after each edit runs ``jaxmem check --format json .``
warm (the cache of the runs before) and with ``--no-cache``, and compares
the two outputs byte for byte.  The edits: none, a comment appended (the
stored join serves), lines inserted at the top (the file's facts move),
the same with ``--jobs 2``, the donation of three definitions dropped (other
files' findings change), a file deleted, a file added.

    .venv/bin/python benchmarks/incremental_exactness.py     # about 3 minutes here

Prints one line per edit; exits 1 at the first difference.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import speed

JAXMEM = str(speed.VENV_BIN / "jaxmem")
NEW_MODULE = """\
import jax


@jax.jit
def fresh(x):
    return x + 1


def loop(x):
    for _ in range(3):
        x = fresh(x)
    return x
"""


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="jaxmem-exactness-") as folder:
        tree = speed.build_tree(Path(folder) / "project", speed.QUICK_PACKAGES)
        files = speed.python_files(tree)
        print(f"{len(files)} files of {', '.join(f'{n} {v}' for n, v in speed.QUICK_PACKAGES)}")
        try:
            for label, edit, options in edits(tree, files):
                edit()
                compare(tree, label, options)
        except AssertionError as error:
            print(f"DIFFERENT: {error}")
            return 1
    print("every warm run equals its run without cache")
    return 0


def edits(tree: Path, files: list[str]):
    """``(label, edit, options)`` in the order they are applied."""
    changed = tree / speed.CHANGED_FILE
    original = changed.read_text(encoding="utf-8")
    donating = [f for f in files if "donate_argnums=(" in (tree / f).read_text(encoding="utf-8")][:3]
    yield "a cold cache", lambda: None, ()
    yield "nothing changed", lambda: None, ()
    yield "a comment appended", lambda: changed.write_text(original + "\n# a comment\n", encoding="utf-8"), ()
    yield "a line inserted at the top", lambda: changed.write_text("# a line\n" + original, encoding="utf-8"), ()
    yield ("two lines inserted, --jobs 2", lambda: changed.write_text("#\n#\n" + original, encoding="utf-8"),
           ("--jobs", "2"))
    for path in donating:
        yield f"the first donation of {path} dropped", lambda path=path: _drop_donation(tree / path), ()
    yield f"{donating[0]} deleted", lambda: (tree / donating[0]).unlink(), ()
    yield "a file added", lambda: (tree / "brax-0.14.2" / "brax" / "new_module.py").write_text(NEW_MODULE), ()


def _drop_donation(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"donate_argnums=\([^)]*\)", "donate_argnums=()", text, count=1), encoding="utf-8")


def compare(tree: Path, label: str, options=()) -> None:
    """Run warm, then without cache; assert equal outputs and print the count of findings."""
    warm, cold = run(tree, *options), run(tree, "--no-cache", *options)
    assert warm == cold, label
    print(f"{label}: identical ({len(json.loads(cold)['findings'])} findings)")


def run(tree: Path, *options: str) -> str:
    done = subprocess.run([JAXMEM, "check", "--format", "json", *options, "."], cwd=tree,
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"jaxmem check failed ({done.returncode}): {done.stderr}")
    return done.stdout


if __name__ == "__main__":
    sys.exit(main())

"""Function calls of the engine's ``facts_for_file`` over the files of a tree that mention
``jit`` or ``pmap``: one process, no cache, under cProfile.  A count, not a time, so two
versions compare on a loaded machine (run each version's own interpreter)::

    OLD/.venv/bin/python benchmarks/facts_calls.py benchmarks/.cache/sdist/optax-0.2.8/optax-0.2.8
    .venv/bin/python benchmarks/facts_calls.py benchmarks/.cache/sdist/optax-0.2.8/optax-0.2.8
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from pathlib import Path

from jaxmem.lint import engine


def main(root: Path) -> None:
    texts = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(errors="replace")
        if "jit" in text or "pmap" in text:
            texts[str(path.relative_to(root))] = text
    hints = engine.project_hints(texts)
    settings = engine.Settings()
    profile = cProfile.Profile()
    profile.enable()
    for path, text in texts.items():
        engine.facts_for_file(path, text, settings, hints)
    profile.disable()
    print(f"{root}: {len(texts)} files, {pstats.Stats(profile).total_calls:,} calls")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

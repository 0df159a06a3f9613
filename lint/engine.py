"""Source -> findings, pure.  Two phases, plain data between them.

``facts_for_file`` parses one file and extracts everything the rules need
(jit definitions, call sites with per-argument liveness facts, local
findings such as parse errors); the result is picklable, so it can be
computed in worker processes and cached by content hash.  ``report``
joins the facts of all files of one run (a call in ``a.py`` of a function
jitted in ``b.py``) and turns them into findings.
"""

from __future__ import annotations

from jaxmem.findings import FileReport
from jaxmem.settings import Settings


def facts_for_file(path: str, text: str, settings: Settings):
    """Parse ``text`` (the contents of ``path``) and extract its facts."""
    raise NotImplementedError("being written")


def report(all_facts: list, settings: Settings) -> list[FileReport]:
    """Join the facts of every file in a run into one report per file."""
    raise NotImplementedError("being written")


def analyze_source(text: str, path: str, settings: Settings | None = None) -> FileReport:
    """Analyse one file on its own (flake8 plugin, stdin)."""
    settings = settings or Settings()
    return report([facts_for_file(path, text, settings)], settings)[0]

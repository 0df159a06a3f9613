"""flake8 plugin: ``flake8 --select JXM`` reports jaxmem's per-file findings.

flake8 runs one file at a time, so only what one file shows is reported
(a call in another file of a function jitted here is not seen); use
``jaxmem check`` for the whole-project view.  Settings come from the
nearest ``[tool.jaxmem]``; flake8's own ``--select``/``--ignore`` and
``# noqa`` apply on top.
"""

from __future__ import annotations

import os
from functools import lru_cache

import jaxmem
from jaxmem.settings import Settings


class JaxmemChecker:
    """The flake8 AST plugin (entry point ``JXM``).

    Uses the lines flake8 already read (encoding handled, BOM stripped)
    rather than the file on disk, so stdin and editors' unsaved buffers work.
    """

    name = "jaxmem"
    version = jaxmem.__version__

    def __init__(self, tree, filename: str, lines: list[str]):
        self.filename = filename
        self.lines = lines

    def run(self):
        """Yield ``(line, col, "JXMnnn message", type)`` with a 0-based column."""
        from jaxmem.config import ConfigError

        try:
            settings = settings_for(os.path.dirname(os.path.abspath(self.filename)))
        except ConfigError as error:
            yield 1, 0, f"JXM900 invalid jaxmem configuration: {error}", type(self)
            return
        try:
            from jaxmem.lint.engine import analyze_source

            report = analyze_source("".join(self.lines), self.filename, settings)
        except Exception as error:  # a jaxmem bug must not abort flake8's run
            from jaxmem.api import internal_error_finding

            finding = internal_error_finding(self.filename, error)
            yield 1, 0, f"{finding.code} {finding.message}", type(self)
            return
        for finding in sorted(report.findings, key=lambda f: f.sort_key):
            if settings.wants(finding.code) and (
                finding.confidence.rank >= settings.min_confidence.rank
            ):
                yield finding.span.line, finding.span.col, (
                    f"{finding.code} {finding.message}"
                ), type(self)


@lru_cache(maxsize=None)
def settings_for(folder: str) -> Settings:
    """The ``[tool.jaxmem]`` settings that apply to files in ``folder``."""
    from jaxmem.config import load_settings

    return load_settings([folder])

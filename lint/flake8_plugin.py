"""flake8 plugin: ``flake8 --select JXM`` reports jaxmem's per-file findings.

flake8 runs one file at a time, so only what one file shows is reported
(a call in another file of a function jitted here is not seen); use
``jaxmem check`` for the whole-project view.  Settings come from the
nearest ``[tool.jaxmem]``; flake8's own ``--select``/``--ignore`` and
``# noqa`` apply on top.

The facts of a file that may involve jit are kept in the project's
``.jaxmem_cache/``, keyed by the text flake8 read (an unsaved buffer too),
so a file flake8 sees again unchanged is not analysed again; the report is
still made from that one file, never with high confidence.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache

import jaxmem


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
            config = config_for(os.path.dirname(os.path.abspath(self.filename)))
        except ConfigError as error:
            yield 1, 0, f"JXM900 invalid jaxmem configuration: {error}", type(self)
            return
        settings = config.settings
        try:
            report = cached_report("".join(self.lines), self.filename, config)
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
def config_for(folder: str):
    """The ``[tool.jaxmem]`` configuration (settings and project root) for files in ``folder``."""
    from jaxmem.config import load_config

    return load_config([folder])


_STDIN_NAMES = ("-", "stdin")


def cached_report(text: str, path: str, config):
    """``engine.analyze_source`` of ``text`` with its facts read from, or
    written to, the cache of ``config``'s project (best effort)."""
    from jaxmem.cache import FactsCache
    from jaxmem.lint import engine

    settings = config.settings
    if path in _STDIN_NAMES:
        return engine.analyze_source(text, path, settings)
    cache = FactsCache(config.root, settings)
    key = _text_key(text, path)
    facts = cache.get(path, key)
    if facts is None:
        facts = engine.facts_for_file(path, text, settings)
        if not facts.skipped:  # a file without jit costs one compile(): not worth an entry
            cache.put(path, key, facts)
            if cache.wrote:
                cache.prune()
    return engine.report([facts], settings, partial_view=True)[0]


def _text_key(text: str, path: str) -> str:
    """The facts key of ``text`` analysed alone: its digest (of the text, not of
    the bytes ``jaxmem check`` keys by), no names from other files, and
    whether its folder is a package."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    package = os.path.exists(os.path.join(os.path.dirname(os.path.abspath(path)), "__init__.py"))
    return f"flake8-text:{digest}||" + ("package" if package else "")

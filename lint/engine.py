"""Source -> findings, pure.  Two phases, plain data between them.

``facts_for_file`` parses one file and extracts everything the rules need
(jit definitions, call sites with per-argument liveness facts, parse
errors); the result is picklable, so it can be computed in worker
processes and cached by content hash.  ``report`` joins the facts of all
files of one run (a call in ``a.py`` of a function jitted in ``b.py``)
and turns them into findings.
"""

from __future__ import annotations

import os
import re

import libcst as cst

from jaxmem.findings import FileReport
from jaxmem.lint.checks import build_reports
from jaxmem.lint.facts import FileFacts, extract, module_names_for
from jaxmem.settings import Settings

# A file with none of these words cannot define or call anything jitted,
# unless it calls a name another file jits (see ``ProjectHints``).
_JIT_WORDS = re.compile(r"\b(jit|pmap|pjit|filter_jit|named_jit|variable_jit|donate_argnums|donate_argnames)\b")


# Where a name from another module can appear: ``from m import a, b`` or ``m.a``.
_IMPORTED_NAMES = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+\(?([\w, \t\n]+)", re.MULTILINE)
_ATTRIBUTE_NAMES = re.compile(r"\.[ \t]*([A-Za-z_]\w*)")
_JITTED_DEF = re.compile(
    r"^[ \t]*@[^\n]*\b(?:jit|pmap|pjit|filter_jit|named_jit|variable_jit)\b[^\n]*\n"
    r"(?:[ \t]*@[^\n]*\n)*[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)",
    re.MULTILINE,
)
_JITTED_ASSIGNMENT = re.compile(
    r"^[ \t]*(?:[\w.]+\.)?(\w+)[ \t]*(?::[^=\n]*)?=[^\n]*\b(?:jit|pmap|pjit|filter_jit|named_jit)\b",
    re.MULTILINE,
)


def might_involve_jit(text: str, settings: Settings, hints: frozenset[str] = frozenset()) -> bool:
    """Cheap textual pre-filter: can this file matter at all?

    It matters when it mentions jit, pmap or donation itself, a configured
    wrapper, or a name that another file of the run jits (``hints``).
    """
    if _JIT_WORDS.search(text):
        return True
    for wrapper in settings.extra_wrappers:
        if wrapper.rsplit(".", 1)[-1] in text:
            return True
    if not hints:
        return False
    if not hints.isdisjoint(_ATTRIBUTE_NAMES.findall(text)):
        return True
    return any(not hints.isdisjoint(re.findall(r"\w+", names)) for names in _IMPORTED_NAMES.findall(text))


def project_hints(texts: dict[str, str]) -> frozenset[str]:
    """Names of what the files of a run jit (decorated defs, ``x = jax.jit(...)``).

    A file that never mentions jit still matters when it calls one of them.
    This is a textual over-approximation; the analysis proper decides.
    """
    names: set[str] = set()
    for text in texts.values():
        if _JIT_WORDS.search(text):
            names.update(_JITTED_DEF.findall(text))
            names.update(_JITTED_ASSIGNMENT.findall(text))
    return frozenset(names)


def _is_package_module(path: str) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.exists(os.path.join(folder, "__init__.py")) and not path.endswith("__main__.py")


def facts_for_file(path: str, text: str, settings: Settings, hints: frozenset[str] = frozenset()) -> FileFacts:
    """Parse ``text`` (the contents of ``path``) and extract its facts."""
    if not might_involve_jit(text, settings, hints):
        return FileFacts(path=path, module_names=module_names_for(path), skipped=True)
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        message = " ".join(str(error.message).split())
        return FileFacts(
            path=path,
            parse_error=(error.raw_line, max(error.raw_column, 0), f"could not parse: {message}; fix the syntax error"),
        )
    facts, _ = extract(
        path,
        module,
        extra_wrappers=settings.extra_wrappers,
        public_module=_is_package_module(path) and "__name__" not in text,
    )
    return facts


def report(all_facts: list[FileFacts], settings: Settings) -> list[FileReport]:
    """Join the facts of every file in a run into one report per file.

    Findings are not yet filtered by select/ignore/confidence or noqa;
    the caller (``jaxmem.api`` or the flake8 plugin) does that.
    """
    return build_reports(all_facts, settings)


def analyze_source(text: str, path: str, settings: Settings | None = None) -> FileReport:
    """Analyse one file on its own (flake8 plugin, stdin, codemod command)."""
    settings = settings or Settings()
    return report([facts_for_file(path, text, settings)], settings)[0]

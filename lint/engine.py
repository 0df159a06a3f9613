"""Source -> findings, pure.  Two phases, plain data between them.

``facts_for_file`` parses one file and extracts everything the rules need
(jit definitions, call sites with per-argument liveness facts, parse
errors); the result is picklable, so it can be computed in worker
processes and cached by content hash.  ``report`` joins the facts of all
files of one run (a call in ``a.py`` of a function jitted in ``b.py``)
and turns them into findings.
"""

from __future__ import annotations

import ast
import os
import warnings

import libcst as cst

from jaxmem.findings import FileReport
from jaxmem.lint.callables.definitions import MODULE_SCOPE
from jaxmem.lint.join.checks import build_reports
from jaxmem.lint.join.facts import FileFacts, extract, module_names_for
from jaxmem.lint.syntax.keeping_methods import maybe_keeping_methods, top_level_functions
from jaxmem.lint.syntax.parsing import parse_module
from jaxmem.lint.syntax.relevance import (  # noqa: F401 (project_hints, reachable_hints, context_selector: re-exported)
    context_selector,
    might_involve_jit,
    private_names,
    project_hints,
    reachable_hints,
    relevant_text,
)
from jaxmem.settings import Settings


def _is_package_module(path: str) -> bool:
    """Whether ``path`` is a module of a package that other projects may import: in a folder
    with an ``__init__.py``, and neither a ``__main__.py`` nor a test module pytest collects
    (``test_*.py``, ``*_test.py``: nothing outside the project calls what those define)."""
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    if name == "__main__.py" or (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py"):
        return False
    return os.path.exists(os.path.join(folder, "__init__.py"))


def _syntax_error(text: str, target_version: str | None = None) -> tuple[int, int, str] | None:
    """Whether ``text`` parses under libcst's grammar (the one the analysis uses).

    CPython's parser answers first (C-fast); only when it rejects the text is
    libcst asked, since the host interpreter may be older than the code
    (``type X = ...`` or PEP 701 f-strings checked under Python 3.11).
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not ours to report
            compile(text, "<checked>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        parsed = _parse(text, target_version)
        if not isinstance(parsed, tuple):
            return None  # newer syntax than the host Python's: libcst reads it
        detail = error.msg or "invalid syntax"
        return (error.lineno or 1, max((error.offset or 1) - 1, 0), f"could not parse: {detail}; fix the syntax error")
    except (ValueError, MemoryError, RecursionError) as error:
        return (1, 0, f"could not parse: {error}")
    return None


def _parse(text: str, target_version: str | None = None) -> cst.Module | tuple[int, int, str]:
    try:
        if target_version is None:
            return parse_module(text)
        return parse_module(text, cst.PartialParserConfig(python_version=target_version))
    except cst.ParserSyntaxError as error:
        message = " ".join(str(error.message).split())
        return (error.raw_line, max(error.raw_column, 0), f"could not parse: {message}; fix the syntax error")


_NOT_GIVEN = object()


def skipped_facts(path: str, text: str, settings: Settings, parse_error=_NOT_GIVEN,
                  private: frozenset[str] | None = None, keeping: frozenset[str] | None = None) -> FileFacts:
    """The facts of a file the pre-filter skips: whether it parses (``parse_error``
    when an earlier run already found it out), and the names of its methods that may
    keep an argument, read from its text (``keeping``, from the pre-filter's summary
    when given: :func:`maybe_keeping_methods`).

    They must stay a function of ``path``, the parse verdict, the private names
    (``private``, from the pre-filter's summary when given) and those methods:
    the stored join (:mod:`jaxmem.runcache`) identifies them by those.
    """
    if parse_error is _NOT_GIVEN:
        parse_error = _syntax_error(text, settings.target_version)
    if private is None:
        private = private_names(text)
    if keeping is None:
        keeping = maybe_keeping_methods(text)
    return FileFacts(path=path, module_names=module_names_for(path), skipped=True, parse_error=parse_error,
                     private_names=private, keeping_methods=keeping)


def facts_for_file(path: str, text: str, settings: Settings, hints: frozenset[str] = frozenset()) -> FileFacts:
    """Parse ``text`` (the contents of ``path``) and extract its facts.

    Only the top-level statements that can matter are parsed with libcst
    (the others are blanked, keeping line numbers); when module-level code
    calls a jitted function, the whole file is analysed, since any function
    of it may read the donated globals.
    """
    if not might_involve_jit(text, settings, hints):
        return skipped_facts(path, text, settings)
    facts = _analysed_facts(path, text, settings, hints)
    facts.private_names = private_names(text)
    return facts


def _analysed_facts(path: str, text: str, settings: Settings, hints: frozenset[str]) -> FileFacts:
    names = module_names_for(path)
    public = _is_package_module(path) and "__name__" not in text
    reduced = relevant_text(text, settings, hints)
    if reduced.blanked:
        # libcst reports errors in what it parses; CPython's parser (much
        # faster) checks what was blanked, which compiles on its own.
        error = _syntax_error(reduced.blanked, settings.target_version)
        if error is not None:
            return FileFacts(path=path, module_names=names, parse_error=error)
    for candidate in (reduced.kept, text) if reduced.blanked else (text,):
        module = _parse(candidate, settings.target_version)
        if isinstance(module, tuple):
            if candidate is text:
                return FileFacts(path=path, module_names=names, parse_error=module)
            continue  # the blanking cut something it should not have: analyse everything
        facts, _ = extract(path, module, extra_wrappers=settings.extra_wrappers, public_module=public,
                           source=text, own_packages=settings.own_packages)
        if candidate is text:
            return facts
        if not _reads_blanked_globals(facts, reduced.blanked_words):
            # the blanked classes' methods were not parsed: read them from the text
            facts.keeping_methods |= maybe_keeping_methods(reduced.blanked, top_level_functions(text))
            return facts
    return facts


def _reads_blanked_globals(facts: FileFacts, blanked_words: set[str]) -> bool:
    """Whether module-level code passes a global that a blanked function may read
    (then that function's reads matter to the global's liveness)."""
    return any(
        arg.key is not None and arg.key[0] in blanked_words
        for call in facts.calls
        if call.scope == MODULE_SCOPE
        for arg in call.args
    )


def report(all_facts: list[FileFacts], settings: Settings, *, partial_view: bool = False,
           keeping_methods: frozenset[str] = frozenset()) -> list[FileReport]:
    """Join the facts of every file in a run into one report per file.

    Findings are not yet filtered by select/ignore/confidence or noqa;
    the caller (``jaxmem.api`` or the flake8 plugin) does that.  With
    ``partial_view`` (the files are not the whole project) no donation is
    proposed with high confidence: unseen files may call the function.
    ``keeping_methods``: methods that may keep an argument in the project's
    files that are not among ``all_facts`` (see :mod:`jaxmem.lint.values.kept_if`).
    """
    return build_reports(all_facts, settings, partial_view=partial_view, keeping_methods=keeping_methods)


def analyze_source(text: str, path: str, settings: Settings | None = None, *, partial_view: bool = True) -> FileReport:
    """Analyse one file on its own (flake8 plugin, codemod command): a partial
    view of its project unless the caller says it is all there is."""
    settings = settings or Settings()
    return report([facts_for_file(path, text, settings)], settings, partial_view=partial_view)[0]

"""The text's keeping methods never miss one that the parsed code says may keep.

``lint.syntax.keeping_methods.maybe_keeping_methods`` reads from a file's text which
methods may keep an argument (for files that are never parsed); it must name every
method of every class that ``keeps_arguments`` (libcst) says may keep one.  This
compares both on every class of the Python files under the given folders (the
corpus's sources, say), the parser's with the calls the file's facts take a method
to keep an argument through (a function of the module that may, a method through
``self`` that may, ``atexit.register``)::

    .venv/bin/python benchmarks/keeping_methods_check.py benchmarks/.cache/src/brax-0.14.2 ...

Methods whose libcst summary gives up ("mixes too many values": every parameter then
counts as returned) are counted apart: no reading of the text can follow that.
Methods that only return (part of) their own object keep no argument a caller gives,
and do not count.  It prints the counts and every miss; the exit status is 1 when
any method is missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import libcst as cst

from jaxmem.lint.callables.definitions import DefinitionFinder
from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.join.facts import _Context
from jaxmem.lint.syntax.keeping_methods import maybe_keeping_methods
from jaxmem.lint.syntax.positions import Positions
from jaxmem.lint.syntax.walk import descendants_of_type
from jaxmem.lint.values.provenance import keeps_arguments, summarize_function


def _known_to_keep(module: cst.Module, text: str):
    """The file's own reading of the calls a method may keep an argument through
    (``_Context._known_to_keep``: a function of the module that may keep one, a method
    through ``self`` that may, ``atexit.register``...), as the facts of the file ask it."""
    positions = Positions(module)
    imports = ImportTable.from_module(module)
    finder = DefinitionFinder(module, positions, imports)
    ctx = _Context(module, positions, imports, finder.run(), finder, text)
    return ctx._known_to_keep


def misses(text: str, module: cst.Module) -> tuple[int, int, list[str]]:
    """``(methods, given up, missed names)`` of one file."""
    named = maybe_keeping_methods(text)
    call_keeps = _known_to_keep(module, text)
    methods = given_up = 0
    missed = []
    for cls in descendants_of_type(module, cst.ClassDef):
        for stmt in cls.body.body:
            if not isinstance(stmt, cst.FunctionDef):
                continue
            methods += 1
            if stmt.name.value in named or not keeps_arguments(stmt, call_keeps=call_keeps):
                continue
            summary = summarize_function(stmt, None, certain_only=True)
            if summary.twice and "too many values" in summary.twice:
                given_up += 1
                continue
            params = stmt.params.params
            if summary.returned and set(summary.returned) <= {params[0].name.value if params else None}:
                continue  # returns (part of) its own object
            missed.append(stmt.name.value)
    return methods, given_up, missed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    files = methods = given_up = 0
    missed: list[str] = []
    for folder in args.folders:
        for path in sorted(p for p in folder.rglob("*.py") if p.is_file()):
            try:
                text = path.read_text(encoding="utf-8")
                module = cst.parse_module(text)
            except (UnicodeDecodeError, cst.ParserSyntaxError):
                continue
            files += 1
            counted, gave_up, names = misses(text, module)
            methods += counted
            given_up += gave_up
            missed.extend(f"{path}: {name}" for name in names)
    print(f"{files} files, {methods} methods: {len(missed)} that may keep an argument missed by the text "
          f"({given_up} more where the libcst summary gives up), {time.perf_counter() - start:.0f} s")
    for line in missed:
        print("  missed:", line)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

"""How the file already spells things: ``functools.partial``, string quotes.

A bare ``@jax.jit`` becomes ``@partial(jax.jit, ...)`` through the file's own
``partial`` or ``functools`` import when it has one; otherwise one import is
added, under a name nothing in the file already uses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import libcst as cst

from jaxmem.lint.imports import ImportTable


@dataclass(frozen=True)
class PartialSpelling:
    """The expression for ``functools.partial`` and the import it needs, if any.

    ``import_needed`` is ``(module, name)`` for libcst's ``AddImportsVisitor``
    (``("functools", "partial")`` or ``("functools", None)``).
    """

    expression: cst.BaseExpression
    import_needed: tuple[str, str | None] | None = None


def _module_level_imports(module: cst.Module) -> ImportTable:
    """Imports at the top level (also inside top-level ``try``/``if``), visible to decorators."""
    table = ImportTable()
    statements = list(module.body)
    top = cst.Module(body=[])
    for stmt in statements:
        if isinstance(stmt, (cst.Try, cst.If)):
            table.names.update(ImportTable.from_module(top.with_changes(body=list(stmt.body.body))).names)
        elif isinstance(stmt, cst.SimpleStatementLine):
            table.names.update(ImportTable.from_module(top.with_changes(body=[stmt])).names)
    return table


class _NamesUsed(cst.CSTVisitor):
    """Every identifier used as a name (not as an attribute) anywhere in the module."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False


def partial_spelling(module: cst.Module) -> PartialSpelling | None:
    """How to write ``functools.partial`` in ``module``; None when every spelling is taken."""
    imports = _module_level_imports(module)
    for local, target in sorted(imports.names.items()):
        if target == "functools.partial":
            return PartialSpelling(cst.Name(local))
    for local, target in sorted(imports.names.items()):
        if target == "functools":
            return PartialSpelling(cst.Attribute(cst.Name(local), cst.Name("partial")))
    used = _NamesUsed()
    module.visit(used)
    if "partial" not in used.names:
        return PartialSpelling(cst.Name("partial"), ("functools", "partial"))
    if "functools" not in used.names:
        return PartialSpelling(cst.Attribute(cst.Name("functools"), cst.Name("partial")), ("functools", None))
    return None


class _Quotes(cst.CSTVisitor):
    def __init__(self) -> None:
        self.counts: Counter = Counter()

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.quote in ('"', "'"):
            self.counts[node.quote] += 1


def preferred_quote(module: cst.Module) -> str:
    """The quote character most strings in ``module`` use (``"`` on a tie)."""
    quotes = _Quotes()
    module.visit(quotes)
    return "'" if quotes.counts["'"] > quotes.counts['"'] else '"'

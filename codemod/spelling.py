"""How the file already spells things: ``functools.partial``, string quotes.

A bare ``@jax.jit`` becomes ``@partial(jax.jit, ...)`` through the file's own
``partial`` or ``functools`` import when it has one; otherwise one import is
added, under a name nothing in the file already uses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import libcst as cst

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.syntax.walk import descendants


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


def _names_used(module: cst.Module) -> set[str]:
    """Every identifier used as a name (not as an attribute) anywhere in the module."""
    names: set[str] = set()
    attributes: set[int] = set()
    for node in descendants(module):
        if isinstance(node, cst.Attribute):
            attributes.add(id(node.attr))
        elif isinstance(node, cst.Name) and id(node) not in attributes:
            names.add(node.value)
    return names


def partial_spelling(module: cst.Module, text: str | None = None) -> PartialSpelling | None:
    """How to write ``functools.partial`` in ``module`` (whose code is ``text``, when given);
    None when every spelling is taken."""
    imports = _module_level_imports(module)
    for local, target in sorted(imports.names.items()):
        if target == "functools.partial":
            return PartialSpelling(cst.Name(local))
    for local, target in sorted(imports.names.items()):
        if target == "functools":
            return PartialSpelling(cst.Attribute(cst.Name(local), cst.Name("partial")))
    # Most files never spell either word: then no walk over the whole tree is needed.
    mentioned = text is None or "partial" in text or "functools" in text
    used = _names_used(module) if mentioned else set()
    if "partial" not in used:
        return PartialSpelling(cst.Name("partial"), ("functools", "partial"))
    if "functools" not in used:
        return PartialSpelling(cst.Attribute(cst.Name("functools"), cst.Name("partial")), ("functools", None))
    return None


def preferred_quote(module: cst.Module, text: str | None = None) -> str:
    """The quote character most strings in ``module`` (whose code is ``text``, when given)
    use (``"`` on a tie)."""
    if text is not None and "'" not in text:
        return '"'  # no single-quoted string: no walk over the whole tree
    counts: Counter = Counter(
        node.quote for node in descendants(module)
        if isinstance(node, cst.SimpleString) and node.quote in ('"', "'")
    )
    return "'" if counts["'"] > counts['"'] else '"'

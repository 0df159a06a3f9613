"""Add an import where isort and ruff's ``I001`` put it.

libcst's ``AddImportsVisitor`` appends a new import after the last one, so
``from functools import partial`` lands below ``import jax`` and the file
fails ``ruff check --select I``.  Here the standard-library import goes into
the standard-library section of the first import block, sorted as isort's
and ruff's defaults sort (``__future__``, standard library, everything else,
relative; within a section ``import x`` before ``from x import y``, module
names case-insensitively; imported names constants, then classes, then the
rest), and a name joins an existing ``from functools import ...`` in its
sorted place.  Only the standard library is recognised (``sys.stdlib_module_names``):
a new import never needs to tell third-party from first-party code.
"""

from __future__ import annotations

import sys

import libcst as cst

from jaxmem.notebooks import MAGIC_CALL

FUTURE, STDLIB, OTHER, RELATIVE = range(4)
STDLIB_NAMES = frozenset(getattr(sys, "stdlib_module_names", ())) | {"functools"}


def add_import(module: cst.Module, module_name: str, name: str | None) -> cst.Module | None:
    """``module`` with ``from module_name import name`` (or ``import module_name``)
    added in its sorted place; None when the module has no import block to sort into."""
    body = list(module.body)
    start, end = import_block(body)
    if start == end:
        return None
    if name is not None:
        for index in range(start, end):
            merged = _merge_name(body[index], module_name, name)
            if merged is not None:
                body[index] = merged
                return module.with_changes(body=body)
    spelled = f"from {module_name} import {name}" if name is not None else f"import {module_name}"
    new = cst.parse_statement(spelled + "\n")
    key = _sort_key(new.body[0])
    section = _section(new.body[0])
    statements = [(index, body[index].body[0]) for index in range(start, end) if _is_import(body[index])]
    same = [(index, node) for index, node in statements if _section(node) == section]
    later = next((index for index, node in same if _sort_key(node) > key), None)
    if later is not None:
        if later == same[0][0]:  # the new first import of its section: the blank lines above move up to it
            blank, comments = _split_leading(body[later])
            new = new.with_changes(leading_lines=blank)
            body[later] = body[later].with_changes(leading_lines=comments)
        body.insert(later, new)
    elif same:
        body.insert(same[-1][0] + 1, new)
    else:
        following = next((index for index, node in statements if _section(node) > section), None)
        if following is None:  # a section of its own after the last one
            body.insert(statements[-1][0] + 1, new.with_changes(leading_lines=(cst.EmptyLine(),)))
        else:  # a section of its own before ``following``'s, separated by a blank line
            blank, comments = _split_leading(body[following])
            if not blank and any(_section(node) < section for _, node in statements):
                blank = (cst.EmptyLine(),)
            new = new.with_changes(leading_lines=blank)
            body[following] = body[following].with_changes(leading_lines=(cst.EmptyLine(), *comments))
            body.insert(following, new)
    return module.with_changes(body=body)


def import_block(body) -> tuple[int, int]:
    """``(start, end)`` indices of the first run of import statements, after a
    docstring and notebook magic placeholders (``start == end``: none)."""
    index = 0
    if body and _is_docstring(body[0]):
        index = 1
    while index < len(body) and is_magic_placeholder(body[index]):
        index += 1
    start = index
    while index < len(body) and _is_import(body[index]):
        index += 1
    return start, index


def is_magic_placeholder(statement) -> bool:
    """Whether ``statement`` stands for a notebook magic line (:mod:`jaxmem.notebooks`)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return False
    node = statement.body[0]
    value = node.value if isinstance(node, (cst.Expr, cst.Assign)) else None
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
            and value.func.value == MAGIC_CALL)


def _split_leading(statement) -> tuple[tuple, tuple]:
    """A statement's leading lines: the blank ones up to the first comment, and the rest."""
    lines = tuple(statement.leading_lines)
    count = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
    return lines[:count], lines[count:]


def _is_import(statement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], (cst.Import, cst.ImportFrom)))


def _is_docstring(statement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _module_name(node) -> str:
    if isinstance(node, cst.Import):
        return cst.Module(body=[]).code_for_node(node.names[0].name)
    dots = "." * len(node.relative)
    return dots + (cst.Module(body=[]).code_for_node(node.module) if node.module is not None else "")


def _section(node) -> int:
    name = _module_name(node)
    if name.startswith("."):
        return RELATIVE
    top = name.split(".")[0]
    if top == "__future__":
        return FUTURE
    return STDLIB if top in STDLIB_NAMES else OTHER


def _sort_key(node) -> tuple:
    return (isinstance(node, cst.ImportFrom), _module_name(node).lower(), _module_name(node))


def _name_key(name: str) -> tuple:
    """ruff's ``order-by-type``: CONSTANTS, then Classes, then the rest."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (kind, name.lower(), name)


def _merge_name(statement, module_name: str, name: str):
    """``statement`` with ``name`` added when it is ``from module_name import ...`` (None otherwise)."""
    node = statement.body[0]
    if not (isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None
            and _module_name(node) == module_name and not isinstance(node.names, cst.ImportStar)):
        return None
    aliases = list(node.names)
    spelled = [cst.Module(body=[]).code_for_node(alias.name) for alias in aliases]
    if name in spelled:
        return statement
    position = next((i for i, s in enumerate(spelled) if _name_key(s) > _name_key(name)), len(aliases))
    separator = next((alias.comma for alias in aliases[:-1] if isinstance(alias.comma, cst.Comma)),
                     cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new = cst.ImportAlias(name=cst.Name(name))
    if position == len(aliases):
        aliases[-1], new = aliases[-1].with_changes(comma=separator), new.with_changes(comma=aliases[-1].comma)
    else:
        new = new.with_changes(comma=separator)
    aliases.insert(position, new)
    return statement.with_changes(body=[node.with_changes(names=aliases)])

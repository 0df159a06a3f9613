"""Write a file's edits in time linear in its size: splice, do not regenerate.

Transforming the whole libcst tree (and running ``AddImportsVisitor`` over
it) costs time for every node of the file, for every file edited; on a
5 MB file with 26,000 edits that took minutes.  Here only two things are
regenerated:

* the *top block*: the statements up to the first one after the leading
  imports (the only ones ``AddImportsVisitor`` reads or changes), rebuilt
  with the edits inside it and the new import;
* each other edited expression (a jit call or a bare decorator's
  expression), whose new code replaces exactly its old characters.

Everything else is the original text, byte for byte.  When an expression's
old characters are not exactly its code (never seen; a safety net), the
caller falls back to transforming the whole tree.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Callable

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from jaxmem.codemod.imports import add_import, import_block
from jaxmem.lint.syntax.positions import Positions

Edit = Callable[[cst.CSTNode], cst.CSTNode]


class CannotSplice(Exception):
    """The text does not line up with the tree; transform the whole tree instead."""


@dataclass(frozen=True)
class SplicedText:
    """The edited text, and a shorter text holding every jitted definition, for checking."""

    text: str
    checked: str


def replace_in_tree(module: cst.Module, replacements: dict[int, Edit], imports) -> str:
    """The edited text by transforming the whole tree (the slow, always-right way)."""
    new_module = module.visit(_Replace(replacements))
    return _add_imports(new_module, imports).code


def splice(module: cst.Module, positions: Positions, text: str, nodes: dict[int, cst.CSTNode],
           replacements: dict[int, Edit], imports, keep_lines: set[int]) -> SplicedText:
    """``text`` (the code of ``module``, whose ``positions`` are given) with ``replacements``
    applied and ``imports`` added.

    ``nodes`` maps each replaced node's id to the node.  ``keep_lines`` are
    lines of jitted definitions: the top-level statements holding them, and
    every top-level statement that is not a ``def`` or ``class``, make up
    :attr:`SplicedText.checked`.  Raises :class:`CannotSplice`.
    """
    body = list(module.body)
    # The import block and the statement after it (which gets a blank line before it).
    top = min(_after_import_block(module) + 2, len(body)) if imports else 0
    if top == len(body):
        raise CannotSplice("no statement after the top block")
    expressions = {key: _expression(node) for key, node in nodes.items()}
    try:
        offsets = {id(node): positions.code_offsets(node) for node in [*body, *expressions.values()]}
    except KeyError:
        raise CannotSplice("a node without a position") from None
    prefix_end = offsets[id(body[top - 1])][1] if top else 0
    head = module.with_changes(body=body[:top], footer=(), has_trailing_newline=True)
    old_head = head.code if top else ""
    if text[:prefix_end] != old_head:
        raise CannotSplice("the top block is not the start of the text")
    new_head = _add_imports(head.visit(_Replace(replacements)), imports).code if top else ""

    cuts = []  # (start, end, new code) of each edited expression after the top block
    for key, node in nodes.items():
        old = expressions[key]
        start, end = offsets[id(old)]
        if start < prefix_end:
            continue
        if text[start:end] != module.code_for_node(old):
            raise CannotSplice("an expression's characters are not its code")
        cuts.append((start, end, module.code_for_node(_expression(replacements[key](node)))))
    cuts.sort()

    line_starts = _line_starts(text)
    first_lines = [bisect.bisect_right(line_starts, offsets[id(statement)][0]) for statement in body]
    holding_definitions = {bisect.bisect_right(first_lines, line) - 1 for line in keep_lines}
    pieces, checked = [new_head], [new_head]
    cut = 0
    end = prefix_end
    for index in range(top, len(body)):
        start, end = end, offsets[id(body[index])][1]  # from the last end: the header too
        if index == len(body) - 1:
            end = len(text)  # the footer goes with the last statement
        statement = []
        position = start
        while cut < len(cuts) and cuts[cut][0] < end:
            cut_start, cut_end, code = cuts[cut]
            statement += [text[position:cut_start], code]
            position = cut_end
            cut += 1
        statement.append(text[position:end])
        new = "".join(statement)
        pieces.append(new)
        if index in holding_definitions or not isinstance(body[index], (cst.FunctionDef, cst.ClassDef)):
            checked.append(new)
    return SplicedText("".join(pieces), "".join(checked))


def _expression(node: cst.CSTNode) -> cst.CSTNode:
    """The part of an edited node that is spliced: a decorator's expression, or the node."""
    return node.decorator if isinstance(node, cst.Decorator) else node


def _after_import_block(module: cst.Module) -> int:
    """Index of the last statement of the leading import block (where imports are
    inserted), -1 when there is none; a leading docstring (and, in a notebook, the
    magic lines before the imports) counts as part of it."""
    start, end = import_block(module.body)
    if start == end:
        return 0 if module.body and _is_docstring(module.body[0]) else -1
    return end - 1


def _is_docstring(statement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index != -1:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _add_imports(module: cst.Module, imports) -> cst.Module:
    """``module`` with ``imports`` added where isort puts them (:mod:`jaxmem.codemod.imports`);
    libcst's ``AddImportsVisitor`` when the module has no import block to sort into."""
    if not imports:
        return module
    left = []
    for module_name, obj in sorted(imports, key=repr):
        added = add_import(module, module_name, obj)
        if added is None:
            left.append((module_name, obj))
        else:
            module = added
    if not left:
        return module
    context = CodemodContext()
    for module_name, obj in left:
        AddImportsVisitor.add_needed_import(context, module_name, obj)
    return AddImportsVisitor(context).transform_module(module)


class _Replace(cst.CSTTransformer):
    """Replaces planned nodes (by identity) with their edited form."""

    def __init__(self, replacements: dict[int, Edit]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        edit = self.replacements.get(id(original_node))
        return updated_node if edit is None else edit(updated_node)

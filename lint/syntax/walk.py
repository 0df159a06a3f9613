"""Fast traversal of libcst trees.

``CSTNode.visit`` rebuilds every node it passes (it is written for
transformers) and costs several times a parse; the analysis only reads, so
it walks dataclass fields directly.  Statement-level helpers let most
passes skip expressions altogether.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Iterator

import libcst as cst

# Fields that only ever hold formatting (whitespace, comments, parentheses,
# commas, colons): no analysis looks inside them, and skipping them halves
# the nodes a walk visits.
_FORMATTING_FIELDS = frozenset({
    "lpar", "rpar", "comma", "trailing_comma", "semicolon", "colon", "first_colon", "second_colon",
    "equal", "dot", "separator", "leading_lines", "lines_after_decorators", "empty_lines", "header",
    "footer", "trailing_whitespace", "leading_whitespace", "newline",
})


@lru_cache(maxsize=None)
def _child_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(node_type)
                 if f.name not in _FORMATTING_FIELDS and not f.name.startswith("whitespace"))


# type -> whether it is a CSTNode: libcst's classes are ABCs, whose
# isinstance checks cost several times a dictionary lookup.
_IS_NODE: dict[type, bool] = {}


def _is_node(value) -> bool:
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Direct children of ``node`` in source order, formatting nodes (whitespace,
    comments, parentheses, commas) left out."""
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            for item in value:
                if _is_node(item):
                    yield item
        elif _is_node(value):
            yield value


def descendants(node: cst.CSTNode, *, into_scopes: bool = True) -> Iterator[cst.CSTNode]:
    """Every node below ``node`` (pre-order); ``into_scopes=False`` stops at
    nested functions, lambdas and classes."""
    stack = list(children(node))
    stack.reverse()
    while stack:
        current = stack.pop()
        yield current
        if not into_scopes and isinstance(current, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        nested = list(children(current))
        nested.reverse()
        stack.extend(nested)


def suite_statements(suite) -> list:
    """The statements of an indented block or of a one-line suite (``if x: return y``)."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return list(getattr(suite, "body", []))


def blocks_of(stmt) -> list[list]:
    """The statement lists nested directly in a compound statement."""
    blocks: list[list] = []
    for name in ("body", "orelse", "finalbody"):
        part = getattr(stmt, name, None)
        if part is None:
            continue
        if isinstance(part, cst.BaseSuite):
            blocks.append(suite_statements(part))
        elif hasattr(part, "body"):
            inner = part.body
            if isinstance(inner, cst.BaseSuite):
                blocks.append(suite_statements(inner))
            if isinstance(part, cst.If):
                blocks.extend(blocks_of(part)[1:])
    for handler in getattr(stmt, "handlers", ()) or ():
        blocks.append(suite_statements(handler.body))
    for case in getattr(stmt, "cases", ()) or ():
        blocks.append(suite_statements(case.body))
    return blocks


def statements(body, *, into_scopes: bool = True) -> Iterator:
    """Every statement in ``body`` and the blocks nested in it (pre-order)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, cst.SimpleStatementLine):
            continue
        if not into_scopes and isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        for block in blocks_of(stmt):
            yield from statements(block, into_scopes=into_scopes)


def small_statements(body, *, into_scopes: bool = True) -> Iterator[cst.BaseSmallStatement]:
    """Every simple statement (``x = 1``, ``return y``, ``import z``) in ``body``."""
    for stmt in statements(body, into_scopes=into_scopes):
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body


def call_argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument ``call`` passes for a parameter at ``position`` named ``keyword``;
    None when it passes none, or when ``*args``/``**kwargs`` may hide it."""
    if any(arg.star for arg in call.args):
        return None
    by_keyword = [arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == keyword]
    if by_keyword:
        return by_keyword[0]
    positional = [arg for arg in call.args if arg.keyword is None]
    return positional[position].value if len(positional) > position else None


def target_names(target) -> list[str]:
    """The names an assignment target binds (``a``, ``(a, *b)``; not ``x.y`` or ``x[0]``)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def bound_names(node: cst.CSTNode) -> list[str]:
    """The names ``node`` itself binds (a def or class, a parameter, an assignment
    target, a loop or comprehension target, ``with``/``except ... as``, an import,
    ``global``/``nonlocal``, a ``match`` capture), as written (not NFKC-normalised).
    Exact type tests: libcst's classes are ABCs, whose isinstance checks are slow."""
    kind = type(node)
    if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Param:
        return [node.name.value]
    if kind in _TARGETED:
        return target_names(node.target)
    if kind is cst.WithItem and node.asname is not None:
        return target_names(node.asname.name)
    if kind is cst.ExceptHandler and node.name is not None:
        return target_names(node.name.name)
    if kind is cst.ImportAlias:
        name = node.asname.name if node.asname is not None else node.name
        while isinstance(name, cst.Attribute):
            name = name.value
        return target_names(name)
    if kind is cst.Global or kind is cst.Nonlocal:
        return [item.name.value for item in node.names]
    if (kind is cst.MatchAs or kind is cst.MatchStar) and node.name is not None:
        return [node.name.value]
    if kind is cst.MatchMapping and node.rest is not None:
        return [node.rest.value]
    return []


_TARGETED = frozenset({cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del})

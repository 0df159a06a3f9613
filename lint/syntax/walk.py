"""Fast traversal of libcst trees.

``CSTNode.visit`` rebuilds every node it passes (it is written for
transformers) and costs several times a parse; the analysis only reads, so
it walks dataclass fields directly.  Statement-level helpers let most
passes skip expressions altogether.
"""

from __future__ import annotations

import dataclasses
import threading
from bisect import bisect_left
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

import libcst as cst

from jaxmem.lint.syntax.relevance import shortcuts_enabled

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
    return iter(_child_list(node))


def _child_list(node: cst.CSTNode) -> list[cst.CSTNode]:
    found = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            for item in value:
                if _is_node(item):
                    found.append(item)
        elif _is_node(value):
            found.append(value)
    return found


_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# The same as a set of exact types: libcst's node classes have no subclasses, and an
# isinstance check against one (an ABC) costs several times a set lookup.
_SCOPE_TYPES = frozenset(_SCOPES)


class NodeIndex:
    """Every node of one tree in pre-order, with where each subtree ends, so
    the nodes below any node of the tree are a slice of one list.

    The analysis walks the same subtrees many times (a module for its
    globals, each function for its names, yields and calls); with an index
    active (:func:`indexed`) :func:`descendants` reads the slice instead of
    walking fields again.  libcst trees are immutable, so the slice is
    exactly the walk.
    """

    __slots__ = ("nodes", "ends", "where", "_by_type", "_lists_for")

    def __init__(self, root: cst.CSTNode) -> None:
        nodes: list = []
        ends: list[int] = []
        where: dict[int, int] = {}
        stack: list = [root]
        while stack:
            current = stack.pop()
            if type(current) is int:  # the end of the subtree that starts at index ``current``
                ends[current] = len(nodes)
                continue
            at = len(nodes)
            nodes.append(current)
            ends.append(0)
            where.setdefault(id(current), at)  # a node shared by two places has one subtree
            stack.append(at)
            nested = _child_list(current)
            nested.reverse()
            stack.extend(nested)
        self.nodes = nodes
        self.ends = ends
        self.where = where
        self._by_type: dict[type, list[int]] | None = None
        self._lists_for: dict = {}  # types asked -> the position lists of the node types that match

    def position(self, node: cst.CSTNode) -> int | None:
        """``node``'s index in :attr:`nodes`, or None when it is not in this tree."""
        at = self.where.get(id(node))
        return at if at is not None and self.nodes[at] is node else None

    def below(self, at: int, into_scopes: bool) -> Iterator[cst.CSTNode]:
        """The nodes below the node at index ``at`` (see :func:`descendants`)."""
        nodes, end = self.nodes, self.ends[at]
        if into_scopes:
            return iter(nodes[at + 1:end])
        return self._below_in_scope(at + 1, end)

    def below_of_type(self, at: int, types) -> list[cst.CSTNode]:
        """The nodes below the node at index ``at`` that are instances of ``types``, in pre-order."""
        if self._by_type is None:
            by_type: dict[type, list[int]] = {}
            for position, node in enumerate(self.nodes):
                by_type.setdefault(type(node), []).append(position)
            self._by_type = by_type
        lists = self._lists_for.get(types)
        if lists is None:
            lists = self._lists_for[types] = [positions for kind, positions in self._by_type.items()
                                              if issubclass(kind, types)]
        start, end = at + 1, self.ends[at]
        found: list[int] = []
        for positions in lists:
            found.extend(positions[bisect_left(positions, start):bisect_left(positions, end)])
        found.sort()
        nodes = self.nodes
        return [nodes[position] for position in found]

    def _below_in_scope(self, at: int, end: int) -> Iterator[cst.CSTNode]:
        nodes, ends = self.nodes, self.ends
        while at < end:
            current = nodes[at]
            yield current
            at = ends[at] if type(current) in _SCOPE_TYPES else at + 1


_active = threading.local()


@contextmanager
def indexed(root: cst.CSTNode):
    """While the block runs (on this thread), :func:`descendants` of any node of
    ``root``'s tree reads a :class:`NodeIndex` instead of walking.  A shortcut
    like the pre-filter's: ``JAXMEM_NO_SHORTCUTS=1`` turns it off, so the
    exactness checks compare both ways."""
    previous = getattr(_active, "index", None)
    _active.index = NodeIndex(root) if shortcuts_enabled() else None
    try:
        yield _active.index
    finally:
        _active.index = previous


def descendants(node: cst.CSTNode, *, into_scopes: bool = True) -> Iterator[cst.CSTNode]:
    """Every node below ``node`` (pre-order); ``into_scopes=False`` stops at
    nested functions, lambdas and classes."""
    index, at = _indexed(node)
    if at is not None:
        return index.below(at, into_scopes)
    return _walk(node, into_scopes)


def descendants_of_type(node: cst.CSTNode, types) -> list[cst.CSTNode]:
    """The nodes below ``node`` that are instances of ``types`` (a type or a tuple
    of types), in pre-order: ``[n for n in descendants(node) if isinstance(n, types)]``,
    found without visiting the others when an index is active."""
    index, at = _indexed(node)
    if at is not None:
        return index.below_of_type(at, types)
    return [n for n in _walk(node, True) if isinstance(n, types)]


def _indexed(node: cst.CSTNode) -> tuple[NodeIndex | None, int | None]:
    """The active index and ``node``'s position in it (None when there is none, or
    ``node`` is not in its tree)."""
    index = getattr(_active, "index", None)
    return (index, None) if index is None else (index, index.position(node))


def _walk(node: cst.CSTNode, into_scopes: bool) -> Iterator[cst.CSTNode]:
    stack = _child_list(node)
    stack.reverse()
    while stack:
        current = stack.pop()
        yield current
        if not into_scopes and isinstance(current, _SCOPES):
            continue
        nested = _child_list(current)
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


def target_stores(target) -> list[cst.BaseExpression]:
    """The attributes and items an assignment target stores into (``x.y`` and ``d[k]`` of
    ``x.y, (d[k], n) = ...``), which :func:`target_names` leaves out."""
    if isinstance(target, (cst.Attribute, cst.Subscript)):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [store for element in target.elements for store in target_stores(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_stores(target.value)
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

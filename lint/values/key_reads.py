"""Which entries of a container argument a helper may read.

``check(b)`` after ``step(b["q"])`` donated ``b["q"]`` crashes only if
``check`` reads ``b["q"]``.  A helper parameter's summary is the set of
constant keys its body reads (``p["k"]``, ``p["k"].attr``, ``p["k"][i]``,
also ``p[0]``; ``p["k"].shape`` reads no buffer) when those subscripts are its
only uses.  Any other use means
it may read everything (``None``): the parameter read whole, rebound,
passed on, returned, stored, iterated, unpacked, ``**``-expanded, called a
method on, written through (``p["k"] = v``), or used inside a nested
function, lambda or generator expression (which may run later).  Decorated
functions (``@jax.jit`` reads every leaf), generators and ``async`` functions
get no summary at all.

Assumes ``p["k"]`` reads only entry ``"k"``: true of dicts, lists, tuples and
the pytree containers (``FrozenDict``); a class whose ``__getitem__`` reads
other entries would defeat it.
"""

from __future__ import annotations

from collections import Counter

import libcst as cst

from jaxmem.lint.syntax.walk import bound_names, children, statements, suite_statements
from jaxmem.lint.values.metadata import METADATA_ATTRIBUTES
from jaxmem.lint.values.refs import ident, literal_subscript

KeyReads = dict[str, "frozenset[str] | None"]  # parameter -> key parts it may read (None: all)

_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.GeneratorExp})
# Statements and clauses whose ``target`` is written (``p["k"] = v``, ``del p["k"]``, ``for p["k"] in ...``).
_TARGET_OWNERS = frozenset({cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.Del})


class _NoSummary(Exception):
    """Stop the walk: a ``yield`` (the body runs only when iterated, maybe after the
    donation), or every parameter may already be read whole."""


def parameter_key_reads(function: cst.FunctionDef) -> KeyReads:
    """For each named parameter of ``function`` (not ``*args``/``**kwargs``), the
    key parts (``'["k"]'``) its body may read from it, or None when it may read
    any part; empty when the function gets no summary."""
    if function.decorators or function.asynchronous is not None:
        return {}
    p = function.params
    reads: KeyReads = {ident(q.name.value): frozenset() for q in [*p.posonly_params, *p.params, *p.kwonly_params]}
    try:
        _visit(function.body, reads, set(), nested=False)
    except _NoSummary:
        return {}
    return reads


def _visit(node: cst.CSTNode, reads: KeyReads, stores: set[int], nested: bool) -> None:
    """One pass over ``node`` (pre-order, so a target is marked before it is reached)."""
    kind = type(node)
    if kind is cst.Name:
        name = ident(node.value)
        if name in reads:
            _read_whole(name, reads)  # or bound, or shadowed
        return
    if kind is cst.Subscript and type(node.value) is cst.Name and ident(node.value.value) in reads:
        name = ident(node.value.value)
        part = literal_subscript(node)
        if part is None or nested or id(node) in stores:
            _read_whole(name, reads)
            for element in node.slice:
                _visit(element, reads, stores, nested)  # ``p[q]``: ``q`` is read whole
        elif reads[name] is not None:
            reads[name] = reads[name] | {part}
        return
    if kind is cst.Attribute:
        if node.attr.value in METADATA_ATTRIBUTES and _entry_of(node.value, reads):
            return  # ``p["k"].shape``: metadata stays readable after donation
        _visit(node.value, reads, stores, nested)  # ``.attr`` is a name, not a variable
        return
    if kind is cst.Arg:
        _visit(node.value, reads, stores, nested)  # ``f(p=1)``: ``p`` names a parameter of ``f``
        return
    if kind is cst.Yield:
        raise _NoSummary
    if kind in _TARGET_OWNERS:
        _mark_targets(node.target, stores)
    elif kind is cst.WithItem and node.asname is not None:
        _mark_targets(node.asname.name, stores)
    inner = nested or kind in _SCOPES
    for child in children(node):
        _visit(child, reads, stores, inner)


def _read_whole(name: str, reads: KeyReads) -> None:
    reads[name] = None
    if all(parts is None for parts in reads.values()):
        raise _NoSummary


def _mark_targets(target: cst.CSTNode, stores: set[int]) -> None:
    stores.add(id(target))
    if type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            _mark_targets(element.value, stores)
    elif type(target) is cst.StarredElement:
        _mark_targets(target.value, stores)


def _entry_of(node: cst.CSTNode, reads: KeyReads) -> bool:
    """Whether ``node`` is ``p["k"]`` for a parameter ``p``."""
    return (type(node) is cst.Subscript and type(node.value) is cst.Name and ident(node.value.value) in reads
            and literal_subscript(node) is not None)


def argument_key_reads(function: cst.FunctionDef, reads: KeyReads, call: cst.Call) -> dict[int, frozenset[str]]:
    """``id(argument value) -> key parts`` for the arguments of ``call`` (a call of
    ``function``) that bind a parameter reading only those parts of it."""
    if any(arg.star for arg in call.args):
        return {}
    p = function.params
    positional = [ident(q.name.value) for q in [*p.posonly_params, *p.params]]
    by_keyword = {ident(q.name.value) for q in [*p.params, *p.kwonly_params]}
    out: dict[int, frozenset[str]] = {}
    index = 0
    for arg in call.args:
        if arg.keyword is None:
            name = positional[index] if index < len(positional) else None  # beyond: into ``*args``
            index += 1
        else:
            name = ident(arg.keyword.value)
            if name not in by_keyword:
                continue  # into ``**kwargs``
        parts = reads.get(name) if name is not None else None
        if parts is not None:
            out[id(arg.value)] = parts
    return out


class Bindings:
    """Where a file binds names other than by its top-level ``def`` statements
    (assignments, parameters, imports, nested defs, classes, ``for``/``with``/
    ``except``/``match`` targets, ``global``), so a call of a name can be told
    to reach the file's one def of that name.  Function bodies are walked only
    when a call in them asks."""

    def __init__(self, module: cst.Module) -> None:
        self.module: set[str] = set()  # bound outside any def, or declared ``global``/``nonlocal``
        self._top_of: dict[int, cst.CSTNode] = {}  # id(a def) -> its top-level statement
        self._inside: dict[int, Counter] = {}  # id(top-level statement) -> names bound in it, counted
        for stmt in module.body:
            stack: list[cst.CSTNode] = [stmt]
            while stack:
                node = stack.pop()
                kind = type(node)
                if kind is cst.FunctionDef:
                    if node is not stmt:
                        self.module.add(ident(node.name.value))  # a method, or a def under ``if``
                    self._enter_def(node, stmt)
                    stack.extend(decorator.decorator for decorator in node.decorators)
                    stack.extend(_defaults(node.params))
                    continue
                if kind is cst.Lambda:
                    stack.append(node.body)
                    stack.extend(_defaults(node.params))
                    continue
                self.module.update(_bound_by(node))
                stack.extend(children(node))

    def _enter_def(self, function: cst.FunctionDef, top: cst.CSTNode) -> None:
        self._top_of[id(function)] = top
        for stmt in statements(suite_statements(function.body)):
            if type(stmt) is cst.FunctionDef:
                self._top_of[id(stmt)] = top
            elif type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) in (cst.Global, cst.Nonlocal):
                        self.module.update(_bound_by(small))

    def count_in(self, name: str, function: cst.FunctionDef | None) -> int:
        """How often ``name`` is bound in the top-level statement holding ``function``
        (module-level code: 0; a def not seen: taken as bound)."""
        if function is None:
            return 0
        top = self._top_of.get(id(function))
        if top is None:
            return 2
        if id(top) not in self._inside:
            counted: Counter = Counter()
            stack = list(children(top)) if type(top) is cst.FunctionDef else [top]  # not the def's own name
            while stack:
                node = stack.pop()
                counted.update(_bound_by(node))
                stack.extend(children(node))
            self._inside[id(top)] = counted
        return self._inside[id(top)][name]


def _defaults(params: cst.Parameters) -> list[cst.CSTNode]:
    return [p.default for p in [*params.posonly_params, *params.params, *params.kwonly_params]
            if p.default is not None]


def _bound_by(node: cst.CSTNode) -> list[str]:
    return [ident(name) for name in bound_names(node)]

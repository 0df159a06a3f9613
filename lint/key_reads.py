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
from dataclasses import dataclass, field

import libcst as cst

from jaxmem.lint.metadata import METADATA_ATTRIBUTES
from jaxmem.lint.refs import ident, literal_subscript
from jaxmem.lint.walk import children, descendants

KeyReads = dict[str, "frozenset[str] | None"]  # parameter -> key parts it may read (None: all)

_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.GeneratorExp)


def parameter_key_reads(function: cst.FunctionDef) -> KeyReads:
    """For each named parameter of ``function`` (not ``*args``/``**kwargs``), the
    key parts (``'["k"]'``) its body may read from it, or None when it may read
    any part; empty when the function gets no summary."""
    if function.decorators or function.asynchronous is not None or _is_generator(function):
        return {}
    p = function.params
    reads: KeyReads = {ident(q.name.value): frozenset() for q in [*p.posonly_params, *p.params, *p.kwonly_params]}
    stores = _store_targets(function.body)
    _visit(function.body, reads, stores, nested=False)
    return reads


def _visit(node: cst.CSTNode, reads: KeyReads, stores: set[int], nested: bool) -> None:
    kind = type(node)
    if kind is cst.Name:
        name = ident(node.value)
        if name in reads:
            reads[name] = None  # read whole (or bound, or shadowed)
        return
    if kind is cst.Subscript and type(node.value) is cst.Name and ident(node.value.value) in reads:
        name = ident(node.value.value)
        part = literal_subscript(node)
        if part is None or nested or id(node) in stores:
            reads[name] = None
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
    inner = nested or isinstance(node, _SCOPES)
    for child in children(node):
        _visit(child, reads, stores, inner)


def _entry_of(node: cst.CSTNode, reads: KeyReads) -> bool:
    """Whether ``node`` is ``p["k"]`` for a parameter ``p``."""
    return (type(node) is cst.Subscript and type(node.value) is cst.Name and ident(node.value.value) in reads
            and literal_subscript(node) is not None)


def _store_targets(body: cst.CSTNode) -> set[int]:
    """Ids of the nodes assigned, augmented or deleted in ``body`` (tuple targets unpacked)."""
    out: set[int] = set()
    for node in descendants(body):
        targets = []
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            targets.append(node.target)
        elif isinstance(node, cst.Del):
            targets.append(node.target)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            targets.append(node.asname.name)
        while targets:
            target = targets.pop()
            out.add(id(target))
            if isinstance(target, (cst.Tuple, cst.List)):
                targets.extend(element.value for element in target.elements)
            elif isinstance(target, cst.StarredElement):
                targets.append(target.value)
    return out


def _is_generator(function: cst.FunctionDef) -> bool:
    return any(isinstance(node, cst.Yield) for node in descendants(function.body, into_scopes=False))


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


@dataclass
class Bindings:
    """Where a file binds names other than by its top-level ``def`` statements
    (assignments, parameters, imports, nested defs, classes, ``for``/``with``/
    ``except``/``match`` targets, ``global``), so a call of a name can be told
    to reach the file's one def of that name."""

    module: set[str] = field(default_factory=set)  # outside any def, or declared ``global``
    inside: dict[int, Counter] = field(default_factory=dict)  # id(top-level statement) -> names bound in it
    top_of: dict[int, int] = field(default_factory=dict)  # id(a def) -> id(its top-level statement)

    @classmethod
    def of(cls, module: cst.Module) -> "Bindings":
        out = cls()
        for stmt in module.body:
            names = out.inside.setdefault(id(stmt), Counter())
            if isinstance(stmt, cst.FunctionDef):
                out.top_of[id(stmt)] = id(stmt)
                stack = [(child, True) for child in children(stmt)]
            else:
                stack = [(stmt, False)]
            while stack:
                node, in_def = stack.pop()
                bound = _bound_by(node)
                if isinstance(node, cst.FunctionDef):
                    out.top_of[id(node)] = id(stmt)
                names.update(bound)
                if not in_def or isinstance(node, (cst.Global, cst.Nonlocal)):
                    out.module.update(bound)
                in_def = in_def or isinstance(node, (cst.FunctionDef, cst.Lambda))
                stack.extend((child, in_def) for child in children(node))
        return out

    def count_in(self, name: str, function: cst.FunctionDef | None) -> int:
        """How often ``name`` is bound in the top-level statement holding ``function``
        (module-level code: 0; a def not seen: taken as bound)."""
        if function is None:
            return 0
        top = self.top_of.get(id(function))
        return 2 if top is None else self.inside[top][name]

def _bound_by(node: cst.CSTNode) -> list[str]:
    kind = type(node)
    if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Param:
        names = [node.name.value]
    elif kind in (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del):
        names = _names_in(node.target)
    elif kind is cst.WithItem and node.asname is not None:
        names = _names_in(node.asname.name)
    elif kind is cst.ExceptHandler and node.name is not None:
        names = _names_in(node.name.name)
    elif kind is cst.ImportAlias:
        name = node.asname.name if node.asname is not None else node.name
        while isinstance(name, cst.Attribute):
            name = name.value
        names = _names_in(name)
    elif kind in (cst.Global, cst.Nonlocal):
        names = [item.name.value for item in node.names]
    elif kind in (cst.MatchAs, cst.MatchStar) and node.name is not None:
        names = [node.name.value]
    elif kind is cst.MatchMapping and node.rest is not None:
        names = [node.rest.value]
    else:
        return []
    return [ident(name) for name in names]

def _names_in(target) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _names_in(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return []

"""nnx's functional API: when ``nnx.update`` writes back every array a step donated.

flax's performance guide (flax 0.12.8) trains with::

    graphdef, state = nnx.split(model)            # state holds model's Variables
    for batch in data:
        loss, state = train_step(graphdef, state, batch)
    nnx.update(model, state)                      # model gets the last step's arrays
    evaluate(model)

where the jitted step is::

    def train_step(graphdef, state, batch):
        model = nnx.merge(graphdef, state)
        ...                                       # updates model in place
        state = nnx.state(model)
        return loss, state

``model`` holds the first state's arrays until ``nnx.update``.  Donating
``state`` deletes them; a read of ``model`` after the update reads the new
arrays only if the update writes *every* Variable the donation deleted.  It
does when the step returns the whole state of the graph it merged from its
input (``nnx.merge`` accepts only a complete state, and ``nnx.state`` with no
filter returns every Variable), and the split had no filter either.  Anything
else (a filter, a body that may return its input, a ``del``) is not
recognised, and reads after the update still count.

This module checks the jitted body (pure libcst); ``provenance`` checks the
calling scope.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from jaxmem.lint.syntax.walk import bound_names, descendants, descendants_of_type, small_statements, suite_statements

SPLITS = frozenset({"flax.nnx.split", "flax.nnx.graph.split"})
STATES = frozenset({"flax.nnx.state", "flax.nnx.graph.state"})
MERGES = frozenset({"flax.nnx.merge", "flax.nnx.graph.merge"})
UPDATES = frozenset({"flax.nnx.update", "flax.nnx.graph.update"})

Resolve = Callable[[cst.BaseExpression], "str | None"]


def only_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The one positional argument of ``call`` (no filter, no keyword), or None."""
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def graph_names(expr: cst.BaseExpression) -> tuple[str, ...] | None:
    """``model`` -> ("model",); ``(model, optimizer)`` -> ("model", "optimizer"); else None."""
    if isinstance(expr, cst.Name):
        return (expr.value,)
    if isinstance(expr, (cst.Tuple, cst.List)) and expr.elements and all(
            isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in expr.elements):
        return tuple(e.value.value for e in expr.elements)
    return None


def returns_whole_state(function: cst.FunctionDef, state_param: str, graphdef_param: str, output: int | None,
                        resolve: Resolve, *, split_only: bool = False) -> bool:
    """Whether every return of ``function`` gives, as output ``output`` (None: the whole
    result), ``nnx.state(M)`` (or the state of ``nnx.split(M)``) where ``M`` is what
    ``nnx.merge(graphdef_param, state_param)`` made at the top of the body, unfiltered and
    never rebound.  ``split_only``: every return is ``nnx.split(M)`` (the caller rebinds
    the graphdef from output 0 too)."""
    if not isinstance(function.body, cst.IndentedBlock) or _has_del(function):
        return False
    body = list(function.body.body)
    merged = _merge_statement(body, state_param, graphdef_param, resolve)
    if merged is None:
        return False
    merge_at, names = merged
    if any(_assigns(stmt, name) for stmt in body[merge_at + 1:] for name in names) or any(
            _assigns(stmt, name) for stmt in body[:merge_at] for name in names) or _restructures(function, names):
        return False
    returns = _returns(function)
    if not returns:
        return False
    state_at: dict[str, int] = {}  # a name bound once, at the top, to nnx.state(M)
    for index, stmt in enumerate(body):
        bound = _state_binding(stmt, names, resolve)
        if bound is not None and index > merge_at:
            state_at.setdefault(bound, index)
    for ret in returns:
        if output == 1 and isinstance(ret.value, cst.Call) and _is_whole_split(ret.value, names, resolve):
            continue  # return nnx.split(model), rebound as ``graphdef, state = step(...)``
        if split_only:
            return False
        value = _output(ret.value, output)
        if value is None:
            return False
        if isinstance(value, cst.Call) and _is_whole_state(value, names, resolve):
            continue
        if not isinstance(value, cst.Name) or value.value not in state_at:
            return False
        at = state_at[value.value]
        writes = [i for i, stmt in enumerate(body) if _assigns(stmt, value.value)]
        if writes != [at] or _statement_index(body, ret) <= at:
            return False
        # (the state parameter itself may be rebound so: the merge read it first, and every
        # return comes after the one unconditional rebinding)
        if value.value == graphdef_param or _assigned_in_nested_blocks(function, value.value):
            return False
    return True


def _merge_statement(body, state_param, graphdef_param, resolve):
    """(index, target names) of the top-level ``M = nnx.merge(graphdef_param, state_param)``
    that comes before any rebinding of ``state_param``."""
    for index, stmt in enumerate(body):
        if (_assigns(stmt, state_param) or _assigns(stmt, graphdef_param)) \
                and not _is_merge_of(stmt, state_param, graphdef_param, resolve):
            return None
        if _is_merge_of(stmt, state_param, graphdef_param, resolve):
            target = stmt.body[0].targets[0].target
            names = graph_names(target)
            return (index, names) if names else None
    return None


def _is_merge_of(stmt, state_param, graphdef_param, resolve) -> bool:
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)
            and len(stmt.body[0].targets) == 1):
        return False
    value = stmt.body[0].value
    return (isinstance(value, cst.Call) and resolve(value.func) in MERGES and len(value.args) == 2
            and all(a.keyword is None and not a.star for a in value.args)
            and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == graphdef_param
            and isinstance(value.args[1].value, cst.Name) and value.args[1].value.value == state_param)


def _is_whole_state(call: cst.Call, names: tuple[str, ...], resolve: Resolve) -> bool:
    argument = only_argument(call)
    return resolve(call.func) in STATES and argument is not None and graph_names(argument) == names


def _is_whole_split(call: cst.Call, names: tuple[str, ...], resolve: Resolve) -> bool:
    argument = only_argument(call)
    return resolve(call.func) in SPLITS and argument is not None and graph_names(argument) == names


def _state_binding(stmt, names, resolve) -> str | None:
    """``S`` of ``S = nnx.state(M)`` or ``_, S = nnx.split(M)`` (``M`` the merged ``names``)."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)
            and len(stmt.body[0].targets) == 1 and isinstance(stmt.body[0].value, cst.Call)):
        return None
    target, value = stmt.body[0].targets[0].target, stmt.body[0].value
    if isinstance(target, cst.Name) and _is_whole_state(value, names, resolve):
        return target.value
    parts = graph_names(target) if isinstance(target, (cst.Tuple, cst.List)) else None
    if parts is not None and len(parts) == 2 and parts[0] != parts[1] and _is_whole_split(value, names, resolve):
        return parts[1]
    return None


def _output(value, output: int | None):
    if value is None:
        return None
    if output is None:
        return value
    if isinstance(value, cst.Tuple) and output < len(value.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return value.elements[output].value
    return None


def _assigns(stmt: cst.CSTNode, name: str) -> bool:
    """Whether ``stmt`` (nested functions and classes included: conservative; their
    parameters aside) binds ``name``."""
    return any(name in bound_names(node) for node in (stmt, *descendants(stmt)) if type(node) is not cst.Param)


def _returns(function: cst.FunctionDef) -> list[cst.Return]:
    """The return statements of ``function``'s own code (not of nested functions)."""
    return [small for small in small_statements(suite_statements(function.body), into_scopes=False)
            if isinstance(small, cst.Return)]


def _restructures(function: cst.FunctionDef, names: tuple[str, ...]) -> bool:
    """Whether the body may change which Variables the merged graph has: an attribute of it
    assigned (``model.layer = None`` drops the layer's Variables from ``nnx.state``; only a
    Variable's ``.value`` and item assignment, ``model.w[...] = x``, keep them), or
    ``setattr``/``delattr`` anywhere."""
    for node in descendants(function.body):
        if isinstance(node, cst.Name) and node.value in ("setattr", "delattr"):
            return True
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
            [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else []
        if any(not isinstance(part, cst.Name) and not _keeps_variables(part) and _rooted_at(part, names)
               for target in targets for part in _target_parts(target)):
            return True
    return False


def _target_parts(target):
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_parts(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_parts(target.value)
    else:
        yield target


def _keeps_variables(target) -> bool:
    """``v.value = x`` or ``v[...] = x``: a Variable's value set, the graph unchanged."""
    if isinstance(target, cst.Attribute):
        return target.attr.value == "value"
    return (isinstance(target, cst.Subscript) and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)
            and isinstance(target.slice[0].slice.value, cst.Ellipsis))


def _rooted_at(expr, names: tuple[str, ...]) -> bool:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value in names


def _has_del(function: cst.FunctionDef) -> bool:
    return bool(descendants_of_type(function.body, cst.Del))


def _assigned_in_nested_blocks(function: cst.FunctionDef, name: str) -> bool:
    """Whether a nested function or class of ``function`` rebinds ``name`` (``nonlocal``)."""
    return any(name in bound_names(node) for node in descendants_of_type(function.body, cst.Nonlocal))


def _statement_index(body, node) -> int:
    """The index of the top-level statement of ``body`` that contains ``node``."""
    for index, stmt in enumerate(body):
        if any(inner is node for inner in descendants(stmt)):
            return index
    return -1

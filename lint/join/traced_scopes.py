"""Which functions of a file run only while jax traces, where a donation does nothing.

A call inside a jitted function sees tracers: a donating jit called there
deletes nothing, so no donation is proposed there.  Besides the jitted and
staged functions themselves (decided by the caller), a function runs only
traced when:

* it is a def nested in a traced function whose name does not escape it:
  every mention of the name in the parent is its one ``def``, a call
  (``helper(s)``) or an argument of a tracing transform (``jax.grad(loss_fn)``,
  ``jax.lax.scan(body, ...)``).  A helper handed to ``jax.debug.callback``
  escapes: it runs later, on concrete arrays;
* it is a method of a top-level class whose every mention in the file is its
  ``def`` or ``self.m`` / ``cls.m`` / ``Class.m``, called or handed to a
  tracing transform, inside traced code of the same class (sbx's
  ``cls.update_actor_and_temperature`` inside a jitted ``_train``'s loop
  body).  That holds only while no other file calls it: the method's
  ``.name`` is returned, and the join checks that no other file names it
  other than as a method of its own (``relevance.private_names`` marks a name
  every mention of which in a file is a def or a ``self.``/``cls.`` use).
  Not seen: a base class in another file that defines the method too and
  calls ``self.m`` eagerly on an instance of this class (the template-method
  pattern); then a donation inside the method is not proposed, which only
  costs a proposal.
"""

from __future__ import annotations

import re
from collections import Counter

import libcst as cst

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.syntax.walk import descendants_of_type
from jaxmem.lint.values.array_api import STAGING_HIGHER_ORDER, TRACING_HIGHER_ORDER, TRACING_TRANSFORMS

# Transforms that trace the function handed to them; within a traced parent each runs staged.
TRACING_ANY = TRACING_HIGHER_ORDER | STAGING_HIGHER_ORDER | TRACING_TRANSFORMS
# Decorators a method may carry and still be called as written.
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


def traced_functions(functions, base: set[int], imports: ImportTable, source: str | None,
                     classes: dict[str, list[cst.ClassDef]]) -> dict[int, frozenset[str]]:
    """``id(function)`` -> the method keys (``.name``) its tracing depends on, for every
    function of ``functions`` (``(function, scopes, class_scope)`` in pre-order) that runs
    only traced; ``base`` holds the ids of those traced by themselves (jitted, staged), which
    depend on nothing (an empty set).  ``source`` is the file's whole text."""
    traced: dict[int, frozenset[str]] = {key: frozenset() for key in base}
    by_scope: dict[str, cst.FunctionDef | None] = {}
    for function, scopes, _ in functions:
        by_scope[scopes[0]] = None if scopes[0] in by_scope else function
    escaping: dict[int, bool] = {}
    in_classes = any(class_scope and id(function) in traced for function, _, class_scope in functions)
    methods = _MethodSites(functions, imports, source, classes) if source is not None and in_classes else None
    changed = True
    while changed:
        changed = _inherit(functions, traced, by_scope, escaping, imports)
        if methods is not None and methods.extend(traced):
            changed = True
    return traced


def _inherit(functions, traced, by_scope, escaping, imports) -> bool:
    """Mark the nested defs of traced functions that do not escape them; whether any was new."""
    changed = False
    for function, scopes, _ in functions:  # pre-order: a parent before its nested defs
        if id(function) in traced or len(scopes) < 3 or scopes[0] != f"{scopes[1]}.{function.name.value}":
            continue  # traced already, not nested, or a method of a class inside a function
        parent = by_scope.get(scopes[1])
        if parent is None or id(parent) not in traced:
            continue
        if id(function) not in escaping:
            escaping[id(function)] = escapes(function, parent, imports)
        if not escaping[id(function)]:
            traced[id(function)] = traced[id(parent)]
            changed = True
    return changed


def escapes(function: cst.FunctionDef, parent: cst.FunctionDef, imports: ImportTable) -> bool:
    """Whether the nested def ``function`` may run outside its ``parent``'s run: its name,
    anywhere in ``parent``, is used other than in its one ``def``, called, or handed
    (positionally) to a tracing transform."""
    name = function.name.value
    allowed: set[int] = {id(function.name)}
    for call in descendants_of_type(parent, cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value == name:
            allowed.add(id(call.func))
        elif any(_is_name(arg.value, name) for arg in call.args) and imports.resolve(call.func) in TRACING_ANY:
            allowed.update(id(arg.value) for arg in call.args if _is_name(arg.value, name) and arg.keyword is None)
    return any(node.value == name and id(node) not in allowed for node in descendants_of_type(parent, cst.Name))


def _is_name(node, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


class _MethodSites:
    """The methods of a file's top-level classes whose every mention in the file is a use
    by the class's own code (``self.m``/``cls.m``/``Class.m``, called or handed to a tracing
    transform), with the functions those uses sit in."""

    def __init__(self, functions, imports: ImportTable, source: str, classes) -> None:
        methods = _plain_methods(classes)
        innermost: dict[int, tuple[cst.FunctionDef, tuple[str, str]]] = {}
        receivers_of: dict[str, set[str]] = {}
        for function, scopes, class_scope in functions:  # pre-order: the innermost def comes last
            class_name = class_scope[len("class:"):] if class_scope else None
            if class_name is None or class_name not in classes or not scopes[0].startswith(class_name + "."):
                continue
            if len(scopes) == 2:  # a method: its first parameter is its receiver (not a staticmethod's)
                params = function.params.params
                static = any(_is_name(d.decorator, "staticmethod") for d in function.decorators)
                receivers_of[scopes[0]] = {"self", "cls", class_name} | (
                    {params[0].name.value} if params and not static else set())
            receivers = receivers_of.get(scopes[-2], {"self", "cls", class_name})
            for call in descendants_of_type(function, cst.Call):
                for attribute in self._uses(call, receivers, imports):
                    key = (class_name, attribute.attr.value)
                    if key in methods:
                        innermost[id(attribute)] = (function, key)
        sites: dict[tuple[str, str], list[cst.FunctionDef]] = {}
        for function, key in innermost.values():
            sites.setdefault(key, []).append(function)
        # (method def, the functions that use it, one entry per use); a method mentioned
        # otherwise too (an eager call, a string, another class's) is left out
        self.methods = [(methods[key], key[1], uses) for key, uses in sites.items()
                        if len(re.findall(rf"\b{re.escape(key[1])}\b", source)) == 1 + len(uses)]

    @staticmethod
    def _uses(call: cst.Call, receivers: set[str], imports: ImportTable):
        """The ``receiver.method`` attributes ``call`` calls or hands to a tracing transform."""
        def through_receiver(node) -> bool:
            return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
                and node.value.value in receivers
        if through_receiver(call.func):
            yield call.func
        handed = [arg.value for arg in call.args if arg.keyword is None and through_receiver(arg.value)]
        if handed and imports.resolve(call.func) in TRACING_ANY:
            yield from handed

    def extend(self, traced: dict[int, frozenset[str]]) -> bool:
        """Mark the methods used only in traced code of their class; whether any was new."""
        changed = False
        for method, name, uses in self.methods:
            if id(method) not in traced and all(id(use) in traced for use in uses):
                traced[id(method)] = frozenset().union(*(traced[id(use)] for use in uses)) | {"." + name}
                changed = True
        return changed


def _plain_methods(classes) -> dict[tuple[str, str], cst.FunctionDef]:
    """``(class name, method name)`` -> its def, for the methods of classes defined once that
    carry no decorator but ``staticmethod``/``classmethod`` and are defined once in their class."""
    methods = {}
    for class_name, defs in classes.items():
        if len(defs) != 1:
            continue
        body = [stmt for stmt in defs[0].body.body if isinstance(stmt, cst.FunctionDef)]
        counts = Counter(stmt.name.value for stmt in body)
        for stmt in body:
            if counts[stmt.name.value] == 1 and all(
                    isinstance(d.decorator, cst.Name) and d.decorator.value in _PLAIN_DECORATORS
                    for d in stmt.decorators):
                methods[(class_name, stmt.name.value)] = stmt
    return methods

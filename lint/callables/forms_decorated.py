"""Decorated definitions: ``@jax.jit``, ``@jax.jit(donate_argnums=0)`` and
``@partial(jax.jit, donate_argnums=0)`` on a ``def`` (a method's ``self`` is
shifted off its signature)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from jaxmem.lint.callables.definition_scopes import Scope, decorator_names, last_name
from jaxmem.lint.callables.definition_types import DECORATOR, DECORATOR_CALL, DECORATOR_PARTIAL
from jaxmem.lint.callables.jit_api import Transform
from jaxmem.lint.callables.jit_calls import JitCallReader
from jaxmem.lint.callables.signatures import Signature
from jaxmem.lint.values.refs import RefKey, ident

if TYPE_CHECKING:
    from jaxmem.lint.callables.definitions import DefinitionFinder


def jit_decorator(calls: JitCallReader,
                  node: cst.FunctionDef) -> tuple[Transform, str, cst.Call | None, cst.Decorator] | None:
    """``(transform, form, options, decorator)`` of the first decorator of ``node`` that jits it."""
    for decorator in node.decorators:
        expr = decorator.decorator
        transform = calls.transform_of(expr)
        if transform is not None:
            return transform, DECORATOR, None, decorator
        found = calls.jit_call(expr)
        if found is not None and found[2] is None:
            form = DECORATOR_PARTIAL if calls.is_partial(expr.func) else DECORATOR_CALL
            return found[0], form, found[1], decorator
    return None


# Decorators that may sit above a jit without coming between a call and the jitted function.
TRANSPARENT_OUTER = frozenset({"staticmethod", "classmethod", "abstractmethod", "overload", "named_call"})


def _outer_wrapper(node: cst.FunctionDef, decorator: cst.Decorator) -> str | None:
    """The first decorator above ``decorator`` (applied after the jit) that may come between
    a call and the jitted function, by its last name."""
    for outer in node.decorators:
        if outer is decorator:
            return None
        name = last_name(outer.decorator.func if isinstance(outer.decorator, cst.Call) else outer.decorator)
        if name not in TRANSPARENT_OUTER:
            return name or "?"
    return None


def add_decorated(finder: DefinitionFinder, node: cst.FunctionDef, scopes: list[Scope]) -> bool:
    """Record ``node`` when a decorator jits it; whether one does."""
    jitted = jit_decorator(finder.calls, node)
    if jitted is None:
        return False
    transform, form, options, decorator = jitted
    in_class = scopes[-1].kind == "class"
    is_static = "staticmethod" in decorator_names(node)
    callee: RefKey = ("self", ident(node.name.value)) if in_class else (ident(node.name.value),)
    site = finder.builder.add(
        scopes=scopes,
        callee=callee,
        transform=transform,
        form=form,
        jit_node=decorator,
        options=options,
        signature=Signature.of(node),
        wrapped=node.name.value,
        function_node=node,
        shift=1 if in_class and not is_static else 0,
        public_name=node.name.value,
    )
    wrapper = _outer_wrapper(node, decorator)
    if wrapper is not None:
        site.definition = replace(site.definition, wrapped_by=wrapper)
    return True

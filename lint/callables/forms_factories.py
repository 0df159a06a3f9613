"""Jits made by factories: a module-level function that returns one
(``f = make()``), a method that does (``self.f = self._make()``), a property
that does (``@property def step(self): return jax.jit(...)``); what is returned
is a jit call made in the body, or a nested ``def`` under a jit decorator.
Each definition records the factory that made it (``made_by``) and whether the
file calls that factory otherwise (``made_elsewhere``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst

from jaxmem.lint.callables.definition_scopes import (
    PROPERTY_DECORATORS,
    Scope,
    body_of,
    decorator_names,
    functions_in,
    returned_function,
    scope_name,
)
from jaxmem.lint.callables.definition_types import WRAP_CALL, DefinitionSite
from jaxmem.lint.callables.forms_decorated import jit_decorator
from jaxmem.lint.callables.jit_api import Transform
from jaxmem.lint.callables.signatures import Signature
from jaxmem.lint.syntax.walk import descendants_of_type
from jaxmem.lint.values.refs import RefKey, ref_key, render

if TYPE_CHECKING:
    from jaxmem.lint.callables.definitions import DefinitionFinder


@dataclass
class Product:
    """The jitted callable a factory returns: what its definitions are made of."""

    transform: Transform
    form: str
    options: cst.Call | None
    signature: Signature | None
    wrapped: str | None
    function_node: object
    wrapped_qualname: str | None
    jit_node: cst.CSTNode  # the returned jit call, or the nested def's decorator
    scopes: list[Scope]  # the factory's body is the innermost

    def fields(self) -> dict:
        """``DefinitionBuilder.add``'s keywords for a definition made by this factory."""
        return dict(transform=self.transform, form=self.form, jit_node=self.jit_node, options=self.options,
                    signature=self.signature, wrapped=self.wrapped, function_node=self.function_node, shift=0,
                    wrapped_qualname=self.wrapped_qualname)


def add_factory(finder: DefinitionFinder, node: cst.FunctionDef, scopes: list[Scope]) -> None:
    """``def make_step(...): ... return jax.jit(step, ...)`` (or a jitted nested def returned):
    a property of this kind is a definition of ``self.<name>``; a module-level function is
    registered as a factory, whose definitions are the names its calls are bound to."""
    made = factory_product(finder, node, scopes)
    if made is None:
        return
    in_class = scopes[-1].kind == "class"
    if decorator_names(node) & PROPERTY_DECORATORS:
        if in_class:
            finder.builder.add(scopes=made.scopes, callee=("self", node.name.value), **made.fields())
    elif not in_class:
        # Registered lazily: the callee is whatever the caller binds.
        finder.factories[node.name.value] = made


def add_made(finder: DefinitionFinder, key: RefKey, value: cst.BaseExpression, scopes: list[Scope]) -> None:
    """``key = make(...)`` for a registered factory, or ``key = self._make(...)`` for a method
    factory: a definition of ``key`` made by that factory."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in finder.factories:
        made, factory = finder.factories[value.func.value], value.func.value
    else:
        made = method_factory(finder, value, scopes)
        factory = render(ref_key(value.func)) if made is not None else None
    if made is not None:
        finder.builder.add(scopes=scopes, callee=key, env_scopes=made.scopes, made_by=factory, **made.fields())


def factory_product(finder: DefinitionFinder, node: cst.FunctionDef, scopes: list[Scope]) -> Product | None:
    """The jitted callable ``node`` returns, made in its body: ``return jax.jit(step, ...)``,
    or ``return step`` for a nested ``def step`` under a jit decorator."""
    returned_call, returned_found = finder.calls.returned_jit(node)
    if returned_call is not None:
        inner = scopes + [Scope.of_function(scope_name(scopes, node.name.value), node)]
        transform, options, wrapped_expr = returned_found
        sig, wrapped, fn_node, qual = finder.wrapped.signature_of_wrapped(wrapped_expr, inner)
        return Product(transform, WRAP_CALL, options, sig, wrapped, fn_node, qual, returned_call, inner)
    if not any(nested.decorators for nested in functions_in(body_of(node)).values()):
        return None  # most functions: no decorated nested def to return
    returned = returned_function(node)
    jitted = jit_decorator(finder.calls, returned) if isinstance(returned, cst.FunctionDef) else None
    if jitted is None:
        return None
    transform, form, options, decorator = jitted
    inner = scopes + [Scope.of_function(scope_name(scopes, node.name.value), node)]
    return Product(transform, form, options, Signature.of(returned), returned.name.value, returned, None,
                   decorator, inner)


def method_factory(finder: DefinitionFinder, value: cst.BaseExpression, scopes: list[Scope]) -> Product | None:
    """``self._make_step()``: what a method of the enclosing class returns, when it is a jitted
    callable made in its body (see :func:`factory_product`)."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and isinstance(value.func.value, cst.Name) and value.func.value.value in ("self", "cls")):
        return None
    at = next((i for i in range(len(scopes) - 1, -1, -1) if scopes[i].kind == "class"), None)
    method = scopes[at].functions.get(value.func.attr.value) if at is not None else None
    if method is None or decorator_names(method) & (PROPERTY_DECORATORS | {"staticmethod"}):
        return None
    return factory_product(finder, method, scopes[:at + 1])


def mark_factories_called_elsewhere(sites: list[DefinitionSite], module: cst.Module) -> None:
    """``made_elsewhere`` on each definition whose factory this file calls more often than it
    binds definitions from it (``make()(x)``, ``steps = [make()]``): those share its jit node."""
    bound = Counter(site.definition.made_by for site in sites if site.definition.made_by)
    if not bound:
        return
    called = Counter(render(key) for node in descendants_of_type(module, cst.Call)
                     if (key := ref_key(node.func)) is not None and render(key) in bound)
    for site in sites:
        made_by = site.definition.made_by
        if made_by and called[made_by] > bound[made_by]:
            site.definition = replace(site.definition, made_elsewhere=True)

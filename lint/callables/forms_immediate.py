"""Immediate jits: ``jax.jit(fn, donate_argnums=0)(x)``, defined and called at
once (form ``IMMEDIATE``; recorded for the rules, never fixed).  The join finds
these calls while it reads call sites and asks for each."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxmem.lint.callables.definition_scopes import Scope
from jaxmem.lint.callables.definition_types import IMMEDIATE, MODULE_SCOPE, DefinitionSite

if TYPE_CHECKING:
    from jaxmem.lint.callables.definitions import DefinitionFinder


def add_immediate(finder: DefinitionFinder, expr: cst.Call, scope_name: str) -> DefinitionSite | None:
    """Record ``expr``, a jit called where it is made in scope ``scope_name``; None when it is not one."""
    found = finder.calls.jit_call(expr)
    if found is None or found[2] is None:
        return None
    transform, options, wrapped_expr = found
    root = Scope.of_module(finder.module)
    scopes = [root] if scope_name == MODULE_SCOPE else [root, Scope(scope_name, "function", None)]
    sig, wrapped, fn_node, qual = finder.wrapped.signature_of_wrapped(wrapped_expr, scopes)
    line = finder.builder.positions[expr].start.line
    return finder.builder.add(
        scopes=scopes, callee=(f"<{transform.name} at line {line}>",), transform=transform,
        form=IMMEDIATE, jit_node=expr, options=options, signature=sig, wrapped=wrapped,
        function_node=fn_node, shift=0, wrapped_qualname=qual,
    )

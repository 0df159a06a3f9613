"""Assigned jits: ``step = jax.jit(fn, donate_argnums=0)`` (form ``WRAP_CALL``),
also as a dict element (``self.fns = {"train": jax.jit(fn)}``: callers use
``self.fns["train"]``), in either branch of ``a or b`` and ``x if c else y``,
and compiled ahead of time (``jax.jit(fn).lower(x).compile()``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from jaxmem.lint.callables.definition_scopes import Scope
from jaxmem.lint.callables.definition_types import WRAP_CALL
from jaxmem.lint.callables.jit_calls import JitCallReader
from jaxmem.lint.values.refs import RefKey, literal_part, ref_key

if TYPE_CHECKING:
    from jaxmem.lint.callables.definitions import DefinitionFinder


def assigned_values(target: cst.BaseExpression,
                    value: cst.BaseExpression) -> Iterator[tuple[RefKey, cst.BaseExpression]]:
    """``(key, value)`` for each value ``target = value`` may bind to a name callers use:
    each element of a dict with literal keys, each branch of ``a or b`` and ``x if c else y``."""
    key = ref_key(target)
    if key is None:
        return
    if isinstance(value, cst.Dict):
        for element in value.elements:
            part = literal_part(element.key) if isinstance(element, cst.DictElement) else None
            if part is not None:
                yield from _branches(key + (part,), element.value)
        return
    yield from _branches(key, value)


def _branches(key: RefKey, value: cst.BaseExpression) -> Iterator[tuple[RefKey, cst.BaseExpression]]:
    """``a or b`` and ``x if c else y``: any branch that jits defines ``key``."""
    if isinstance(value, cst.BooleanOperation):
        yield from _branches(key, value.left)
        yield from _branches(key, value.right)
    elif isinstance(value, cst.IfExp):
        yield from _branches(key, value.body)
        yield from _branches(key, value.orelse)
    else:
        yield key, value


def add_wrap_call(finder: DefinitionFinder, key: RefKey, value: cst.BaseExpression, scopes: list[Scope]) -> bool:
    """Record ``key = jax.jit(fn, ...)``; whether ``value`` is a jit call (``jax.jit(donate_argnums=0)``,
    a decorator factory rather than a callable, is one but defines nothing)."""
    value = compiled_jit(value, finder.calls) or value
    found = finder.calls.jit_call(value)
    if found is None:
        return False
    transform, options, wrapped_expr = found
    if wrapped_expr is None:
        return True
    sig, wrapped, fn_node, qual = finder.wrapped.signature_of_wrapped(wrapped_expr, scopes)
    finder.builder.add(
        scopes=scopes, callee=key, transform=transform, form=WRAP_CALL, jit_node=value,
        options=options, signature=sig, wrapped=wrapped, function_node=fn_node, shift=0,
        wrapped_qualname=qual,
    )
    return True


def compiled_jit(value: cst.BaseExpression, calls: JitCallReader) -> cst.Call | None:
    """The jit of ``jax.jit(f, donate_argnums=1).lower(m, d).compile()``, compiled ahead of
    time: the result takes the jit's arguments and donates as it does.  None for any other
    value, and when the jit has static arguments (the compiled callable no longer takes them)."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "compile"
            and isinstance(value.func.value, cst.Call) and isinstance(value.func.value.func, cst.Attribute)
            and value.func.value.func.attr.value == "lower"):
        return None
    jitted = value.func.value.func.value
    found = calls.jit_call(jitted)
    if found is None or any(arg.keyword is not None and arg.keyword.value in ("static_argnums", "static_argnames")
                            for arg in found[1].args):
        return None
    return jitted

"""Which parameters each returned part of a jitted body is built from.

JAX gives each output buffer to at most one donated input: in
``jax.jit(lambda x, y: x + y, donate_argnums=(0, 1))`` one output can take
``x``'s buffer or ``y``'s, not both, so one of them stays readable (JAX warns
"Some donated buffers were not usable"; checked on jax 0.10.2).  A read after
donation certainly raises only when the parameter has a returned part of its
own.  The parts are the elements of returned tuple, list and dict literals
(nested ones flattened); the data flow is :mod:`jaxmem.lint.values.usefulness`'s.
"""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.values.usefulness import CalledFunctions, interpret

Parts = tuple[frozenset[str], ...]  # per returned part: the parameters it preserves


def returned_parts(function: cst.FunctionDef | cst.Lambda, imports: ImportTable,
                   preserving: frozenset[str] = frozenset(), helpers: CalledFunctions | None = None) -> Parts | None:
    """Per returned part, the parameters that reach it through shape-preserving
    operations; None when the returns do not all have the same parts (``preserving``
    and ``helpers`` as for :func:`jaxmem.lint.values.usefulness.interpret`)."""
    body, _, returns = interpret(function, imports, preserving, helpers)
    shapes = [_parts(value) for value in returns]
    if not shapes or any(len(shape) != len(shapes[0]) for shape in shapes):
        return None
    return tuple(frozenset().union(*(body.expr(shape[i])[0] for shape in shapes if shape[i] is not None))
                 for i in range(len(shapes[0])))


def _parts(value) -> list:
    """The leaves of a returned literal: ``(a, {"b": b})`` -> ``[a, b]``."""
    if isinstance(value, (cst.Tuple, cst.List)):
        if any(isinstance(element, cst.StarredElement) for element in value.elements):
            return [value]
        return [part for element in value.elements for part in _parts(element.value)]
    if isinstance(value, cst.Dict):
        if any(not isinstance(element, cst.DictElement) for element in value.elements):
            return [value]
        return [part for element in value.elements for part in _parts(element.value)]
    return [value]

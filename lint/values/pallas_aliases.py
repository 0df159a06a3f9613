"""Which operand of a Pallas kernel call becomes which output.

``pl.pallas_call(kernel, out_shape=..., input_output_aliases={1: 0})(x, cache)``
writes output 0 into operand 1's buffer, and Pallas requires the two to have
the same shape and dtype (a mismatch raises "input_output_aliases contains the
mapping '1:0' ... with a different abstract value"; jax 0.10.2).  Inside a
jitted function that output can take the donated operand's buffer; without
the donation XLA copies the operand first, so the aliasing saves nothing.

The indices count the kernel's flattened operands (pytree leaves), so an
alias is read only where every operand up to it is one array for certain: a
parameter annotated as an array (``cache: jax.Array``) that the body never
rebinds, also spread from a tuple literal bound once (``*prefetch``).  The
kernel is the ``pallas_call(...)`` itself, or a name the body binds to it
once, also wrapped in ``jax.named_scope(name)(...)``.
"""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.callables.imports import ImportTable

PALLAS_CALLS = frozenset({"jax.experimental.pallas.pallas_call"})
# ``jax.named_scope(name)(f)`` calls ``f`` with the same arguments and returns its result.
SCOPE_WRAPPERS = frozenset({"jax.named_scope"})
ARRAY_ANNOTATIONS = frozenset({"jax.Array", "jax.numpy.ndarray"})


def aliased_operands(call: cst.Call, imports: ImportTable, params: dict[str, cst.Param],
                     bound: dict[str, list]) -> list[cst.BaseExpression] | None:
    """The operands of ``call`` whose buffers its outputs take, when ``call`` calls a Pallas
    kernel with literal aliases over operands that are one array each; else None.
    ``params``: the enclosing function's parameters by name; ``bound``: what its body
    binds (:func:`jaxmem.lint.callables.definition_scopes.bindings`)."""
    kernel = _kernel(call.func, imports, bound)
    if kernel is None:
        return None
    aliases = _literal_aliases(kernel)
    operands = _operands(call, bound)
    if not aliases or operands is None or max(aliases) >= len(operands):
        return None
    if not all(_one_array(operand, imports, params, bound) for operand in operands[:max(aliases) + 1]):
        return None
    return [operands[index] for index in sorted(aliases)]


def _kernel(func, imports: ImportTable, bound: dict[str, list]) -> cst.Call | None:
    if isinstance(func, cst.Name):
        func = _bound_once(func.value, bound)
    if (isinstance(func, cst.Call) and isinstance(func.func, cst.Call) and len(func.args) == 1
            and imports.resolve(func.func.func) in SCOPE_WRAPPERS):
        func = func.args[0].value  # jax.named_scope(name)(pl.pallas_call(...))
    if isinstance(func, cst.Call) and imports.resolve(func.func) in PALLAS_CALLS:
        return func
    return None


def _literal_aliases(kernel: cst.Call) -> set[int] | None:
    """The operand indices of ``input_output_aliases={i: j, ...}`` written as integers."""
    for arg in kernel.args:
        if arg.keyword is not None and arg.keyword.value == "input_output_aliases":
            value = arg.value
            if not isinstance(value, cst.Dict):
                return None
            indices = set()
            for element in value.elements:
                if not (isinstance(element, cst.DictElement) and isinstance(element.key, cst.Integer)
                        and isinstance(element.value, cst.Integer)):
                    return None
                indices.add(int(element.key.value, 0))
            return indices
    return None


def _operands(call: cst.Call, bound: dict[str, list]) -> list | None:
    """The call's positional arguments, ``*name`` spread from a tuple or list literal bound once."""
    operands = []
    for arg in call.args:
        if arg.keyword is not None or arg.star == "**":
            return None
        if arg.star == "*":
            spread = _bound_once(arg.value.value, bound) if isinstance(arg.value, cst.Name) else None
            if not isinstance(spread, (cst.Tuple, cst.List)) or any(
                    isinstance(element, cst.StarredElement) for element in spread.elements):
                return None
            operands.extend(element.value for element in spread.elements)
        else:
            operands.append(arg.value)
    return operands


def _one_array(operand, imports: ImportTable, params: dict[str, cst.Param], bound: dict[str, list]) -> bool:
    """Whether ``operand`` is a parameter annotated as an array that the body never rebinds."""
    if not isinstance(operand, cst.Name) or operand.value in bound:
        return False
    param = params.get(operand.value)
    return (param is not None and param.annotation is not None
            and imports.resolve(param.annotation.annotation) in ARRAY_ANNOTATIONS)


def _bound_once(name: str, bound: dict[str, list]):
    """The value of the one plain assignment that binds ``name`` in the body, if that is all."""
    entries = bound.get(name, ())
    if len(entries) != 1 or entries[0] is None:
        return None
    assign = entries[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.value

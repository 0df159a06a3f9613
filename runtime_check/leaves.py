"""Map a compiled module's parameters and results back to pytree leaves.

jax 0.10.2 facts this relies on (``Lowered``/``Compiled`` from ``jax.stages``):

* ``Compiled.args_info`` is the pytree ``((positional...), {keyword: ...})``
  of ``ArgInfo(_aval, donated)`` with static arguments removed; flattening it
  gives the leaves in the order jax numbers them.
* Unused arguments are pruned before lowering: HLO parameter ``k`` is the
  ``k``-th entry of ``sorted(lowered._lowering.compile_args["kept_var_idx"])``
  after any hoisted constants (``lowered._lowering.const_args``) that come
  first.  These are private attributes; without them we assume nothing was
  pruned and say so in the report.
* ``Compiled.input_shardings`` uses the same key paths but only for kept leaves;
  ``Compiled.out_info`` is the output pytree of ``ShapeDtypeStruct`` with
  shardings, flattened in HLO result order.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArgLeaf:
    """One flattened argument leaf of a compiled function."""

    flat_index: int
    key_path: tuple
    parameter: str
    parameter_index: int | None
    path: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    donated: bool
    sharding: Any
    keyword: bool = False


@dataclass(frozen=True)
class OutLeaf:
    """One flattened result leaf."""

    flat_index: int
    path: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    sharding: Any


def _nbytes(shape, dtype) -> int:
    import numpy as np

    # Typed PRNG keys (``key<fry>``, from ``jax.random.key`` or ``nnx.Rngs``) are
    # extended dtypes numpy cannot interpret; they carry their own itemsize.
    itemsize = getattr(dtype, "itemsize", None)
    return int(math.prod(shape)) * (itemsize if isinstance(itemsize, int) else np.dtype(dtype).itemsize)


def parameter_names(fn) -> tuple[list[str], str | None]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], None
    positional = [p.name for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in signature.parameters.values() if p.kind == p.VAR_POSITIONAL), None)
    return positional, varargs


def _positional_name(index: int, positional: list[str], varargs: str | None) -> str:
    if index < len(positional):
        return positional[index]
    if varargs is not None:
        return f"{varargs}[{index - len(positional)}]"
    return f"args[{index}]"


def argument_leaves(compiled, fn, positional_count: int, static_argnums) -> list[ArgLeaf]:
    """The argument leaves of ``compiled``, named after ``fn``'s parameters."""
    import jax

    static = {i % positional_count for i in static_argnums} if positional_count else set()
    dynamic_positions = [i for i in range(positional_count) if i not in static]
    positional, varargs = parameter_names(fn)
    shardings = {path: sharding for path, sharding in
                 jax.tree_util.tree_flatten_with_path(compiled.input_shardings)[0]}
    leaves = []
    flat = jax.tree_util.tree_flatten_with_path(compiled.args_info)[0]
    for flat_index, (key_path, info) in enumerate(flat):
        group, slot, rest = key_path[0].idx, key_path[1], key_path[2:]
        if group == 0:
            original = dynamic_positions[slot.idx] if slot.idx < len(dynamic_positions) else slot.idx
            name = _positional_name(original, positional, varargs)
            index = original
        else:
            name = str(slot.key)
            index = positional.index(name) if name in positional else None
        aval = info._aval
        leaves.append(ArgLeaf(
            flat_index=flat_index, key_path=key_path, parameter=name, parameter_index=index,
            path=name + jax.tree_util.keystr(rest), shape=tuple(aval.shape), dtype=str(aval.dtype),
            nbytes=_nbytes(aval.shape, aval.dtype), donated=bool(info.donated),
            sharding=shardings.get(key_path), keyword=group != 0,
        ))
    return leaves


def output_leaves(compiled) -> list[OutLeaf]:
    """The result leaves of ``compiled`` as ``result[...]`` paths."""
    import jax

    flat = jax.tree_util.tree_flatten_with_path(compiled.out_info)[0]
    return [
        OutLeaf(i, "result" + jax.tree_util.keystr(path), tuple(out.shape), str(out.dtype),
                _nbytes(out.shape, out.dtype), getattr(out, "sharding", None))
        for i, (path, out) in enumerate(flat)
    ]


def hlo_parameter_numbers(lowered, leaf_count: int) -> tuple[dict[int, int], bool]:
    """``{flat leaf index: HLO parameter number}`` for kept leaves.

    Returns the map and whether it came from jax's own pruning record (False:
    the private attributes were missing and no pruning was assumed).
    """
    lowering = getattr(lowered, "_lowering", None)
    compile_args = getattr(lowering, "compile_args", None) or {}
    kept = compile_args.get("kept_var_idx")
    if kept is None:
        return {i: i for i in range(leaf_count)}, False
    constants = len(getattr(lowering, "const_args", ()) or ())
    parameters = {}
    for number, index in enumerate(sorted(kept)):
        leaf = index - constants
        if 0 <= leaf < leaf_count:
            parameters[leaf] = number
    return parameters, True

"""Reads that survive donation: a donated array's metadata stays readable.

Checked on jax 0.10.2 (and numpy 2) with an array deleted by donation:
``x.shape``, ``x.shape[0]``, ``x.dtype.itemsize``, ``f"{x.shape}"``,
``len(x)``, ``jnp.shape(x)``, ``np.shape(x)``, ``np.ndim(x)``,
``jnp.size(x)``, ``jnp.result_type(x)``, ``jax.typeof(x)``,
``jax.eval_shape(f, x)`` and ``jax.tree.map(lambda a: a.shape, x)`` all work;
``x.sum()``, ``str(x)`` and ``repr(x)`` raise "Array has been deleted".
"""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.values.array_api import METADATA_ATTRIBUTES, TREE_MAPS
from jaxmem.lint.values.refs import RefKey, ref_key

# Functions (import-resolved) that read only their array arguments' metadata.
METADATA_FUNCTIONS = frozenset(
    {"numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type",
     "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.result_type",
     "jax.typeof", "jax.eval_shape"}
)


def is_metadata_key(key: RefKey) -> bool:
    """Whether ``key`` reads through a metadata attribute (``x.shape``, ``s.params["w"].shape[0]``)."""
    return any(part in METADATA_ATTRIBUTES for part in key[1:])


def reads_only_metadata(function: cst.BaseExpression) -> bool:
    """Whether ``function`` is a lambda whose parameters are used only for their metadata
    (``lambda a: a.shape``, ``lambda a: (a.shape, a.dtype)``)."""
    if not isinstance(function, cst.Lambda):
        return False
    params = {p.name.value for p in function.params.params}
    if not params or function.params.star_arg is not cst.MaybeSentinel.DEFAULT or function.params.kwonly_params:
        return False
    return not data_reads(function.body, params)


def data_reads(node: cst.CSTNode, names) -> frozenset[str]:
    """The ``names`` that ``node`` reads other than for their metadata (``x + 1`` does,
    ``x.shape`` does not; a nested lambda, which could shadow or capture them, reads all)."""
    finder = _ParamUses(set(names))
    node.visit(finder)
    return frozenset(finder.read)


def is_metadata_call(qualified: str | None, call: cst.Call) -> bool:
    """Whether ``call`` (its callee resolved to ``qualified``) reads only its arguments' metadata."""
    if qualified in METADATA_FUNCTIONS:
        return True
    return qualified in TREE_MAPS and bool(call.args) and reads_only_metadata(call.args[0].value)


class _ParamUses(cst.CSTVisitor):
    """Which of the given names are used other than to read their metadata."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.read: set[str] = set()  # the names used other than for their metadata

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        key = ref_key(node)
        if key is not None and key[0] in self.names and is_metadata_key(key):
            return False  # a.shape, a.dtype.itemsize: fine, and nothing inside to check
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.read |= self.names  # a nested lambda could shadow or capture: not worth following
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.read.add(node.value)

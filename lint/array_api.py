"""What array-library calls do to buffers, as tables (one place, documented).

The advice rules need three facts no signature tells:

* **fresh**: the call returns arrays in new buffers that nothing else holds
  (``jnp.zeros``, ``jax.random.normal``, ...).  A value made only of these,
  of arithmetic, and of jitted calls' results can be donated without
  deleting anything another name still reads.  ``jnp.asarray`` and
  ``jax.device_put`` are *not* fresh: given a jax array they may return it
  as it is (checked on jax 0.10.2).
* **host**: the call returns host NumPy data.  ``jit``/``pmap`` copy host
  arrays to the device and never delete them, so donating them frees
  nothing.
* **shape**: inside a jitted body, which calls keep their array operand's
  shape and dtype (an output of the same shape can take the donated
  buffer) and which change it (``jnp.concatenate``, ``reshape``,
  ``jax.image.resize``, a transpose): no output can take the buffer then.

Names are the import-resolved qualified names (``jax.numpy.zeros`` for
``jnp.zeros``), or method names on any receiver (``x.reshape``).
"""

from __future__ import annotations

_JNP = "jax.numpy."

FRESH_CONSTRUCTORS = frozenset(
    {_JNP + name for name in (
        "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
        "eye", "identity", "arange", "linspace", "logspace", "array", "copy", "tri",
    )}
    | {"jax.random." + name for name in (
        "normal", "uniform", "bernoulli", "categorical", "randint", "truncated_normal",
        "permutation", "choice", "gumbel", "laplace", "exponential", "gamma", "beta", "dirichlet",
        "multivariate_normal", "orthogonal", "rademacher", "ball", "cauchy", "logistic", "poisson",
        "PRNGKey", "key", "split", "fold_in",
    )}
    | {"jax.nn.initializers." + name for name in ("zeros", "ones", "normal", "uniform")}
)

# Calls that return host (NumPy) data; everything under ``numpy.`` counts too.
HOST_PRODUCERS = frozenset({"jax.device_get", "numpy.asarray", "numpy.array", "numpy.stack"})
HOST_ROOTS = frozenset({"numpy", "np"})

# tree_map spellings: ``tree_map(f, tree, *rest)`` keeps the trees' structure.
TREE_MAPS = frozenset({"jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map", "optax.tree_utils.tree_map_params"})

# Inside a jitted body: calls whose result has the shape and dtype of their
# array operands (so an output built by them can take a donated buffer).
SHAPE_PRESERVING = frozenset(
    TREE_MAPS
    | {"optax.apply_updates", "optax.incremental_update", "optax.safe_int32_increment"}
    | {_JNP + name for name in (
        "where", "clip", "maximum", "minimum", "abs", "exp", "log", "sqrt", "square", "tanh",
        "sign", "negative", "add", "subtract", "multiply", "divide", "power", "copy",
    )}
    | {"jax.lax.stop_gradient", "jax.lax.select", "jax.nn.relu", "jax.nn.sigmoid"}
)
# Method calls that return the receiver's structure updated (flax TrainState,
# dataclasses, NamedTuples, optax's ``tx.update`` returning the new state).
SHAPE_PRESERVING_METHODS = frozenset(
    {"apply_gradients", "apply_updates", "replace", "_replace", "update", "at", "set", "add"}
)

# Calls whose result does not have their operand's shape or dtype.
SHAPE_CHANGING = frozenset(
    {_JNP + name for name in (
        "concatenate", "stack", "hstack", "vstack", "reshape", "ravel", "transpose", "swapaxes",
        "moveaxis", "expand_dims", "squeeze", "pad", "tile", "repeat", "sum", "mean", "max", "min",
        "argmax", "argmin", "matmul", "dot", "einsum", "take", "broadcast_to", "astype", "ndarray.astype",
    )}
    | {"jax.image.resize", "jax.image.scale_and_translate", "jax.lax.reshape", "jax.lax.transpose",
       "jax.lax.concatenate", "jax.lax.convert_element_type", "jax.lax.dynamic_slice", "jax.lax.slice"}
)
SHAPE_CHANGING_METHODS = frozenset(
    {"reshape", "ravel", "flatten", "transpose", "T", "astype", "sum", "mean", "max", "min", "squeeze", "swapaxes"}
)

# A parameter that only feeds these is a PRNG key: a few bytes, not worth donating.
PRNG_CONSUMERS_PREFIX = "jax.random."


def is_fresh_constructor(qualified: str | None) -> bool:
    """Whether a call of ``qualified`` returns new buffers nothing else holds."""
    return qualified in FRESH_CONSTRUCTORS


def is_host_producer(qualified: str | None) -> bool:
    """Whether a call of ``qualified`` returns host NumPy data."""
    if qualified is None:
        return False
    return qualified in HOST_PRODUCERS or qualified.split(".")[0] in HOST_ROOTS


# Calls whose result is made of their argument's own arrays (views, not copies).
VIEWS_OF_ARGUMENTS = frozenset(
    {"flax.nnx.split", "flax.nnx.state", "flax.nnx.graph.flatten", "flax.nnx.graph.split",
     "flax.nnx.split_state", "jax.tree_util.tree_flatten", "jax.tree_util.tree_leaves",
     "jax.tree.flatten", "jax.tree.leaves"}
)


def is_view_of_arguments(qualified: str | None) -> bool:
    """Whether a call of ``qualified`` returns its argument's arrays themselves."""
    return qualified in VIEWS_OF_ARGUMENTS

"""Outputs cast and reshaped back to a parameter's own dtype and shape (issue 14):
mixed-precision bodies and kernels compute in float32 and restore the cache's
metadata on the way out (tpu-inference's ``ragged_causal_conv1d``:
``conv_state.astype(jnp.float32)`` ... ``.astype(conv_state_dtype).reshape(
conv_state_shape)``).  Such an output has the parameter's shape and dtype, so
donating it is worth it; a half restore (the shape but not the dtype, or
metadata read after the rebinding) is not.  Each verdict is checked on the
real backend: donated, the buffer is reused (the input is deleted and jax does
not warn), or it is not (the input stays)."""

import textwrap
import warnings

import jax
import jax.numpy as jnp
import libcst as cst
import pytest

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.values.usefulness import NONE, PRESERVED, output_reach

RESTORED_BY_NAMES = """
def step(x, cache):
    cache_dtype = cache.dtype
    cache_shape = cache.shape
    cache = cache.astype(jnp.float32).reshape(-1)
    cache = cache * 2 + x.sum()
    new_cache = cache.astype(cache_dtype)
    return x + 1, new_cache.reshape(cache_shape)
"""

RESTORED_INLINE = """
def step(x, cache):
    wide = cache.astype(jnp.float32) * 2
    return x + 1, jnp.reshape(wide.reshape(-1).astype(cache.dtype), cache.shape)
"""

RESTORED_BY_LAX = """
def step(x, cache):
    wide = jax.lax.convert_element_type(cache, jnp.float32).ravel() * 2
    return x + 1, jax.lax.convert_element_type(wide, cache.dtype).reshape(cache.shape)
"""

SHAPE_ONLY = """
def step(x, cache):
    cache_shape = cache.shape
    wide = cache.astype(jnp.float32).reshape(-1) * 2
    return x + 1, wide.reshape(cache_shape)
"""

METADATA_READ_TOO_LATE = """
def step(x, cache):
    cache = cache.astype(jnp.float32).reshape(-1)
    cache_dtype = cache.dtype
    return x + 1, (cache * 2).astype(cache_dtype)
"""

METADATA_ONLY = """
def step(x, cache):
    return x + 1, jnp.zeros(cache.size, jnp.float32).astype(cache.dtype).reshape(cache.shape)
"""


def _verdict(source: str) -> str:
    module = cst.parse_module("import jax\nimport jax.numpy as jnp\n" + textwrap.dedent(source))
    function = next(stmt for stmt in module.body if isinstance(stmt, cst.FunctionDef))
    return output_reach(function, ImportTable.from_module(module))["cache"]


def _run_donated(source: str):
    """Run ``step`` jitted with ``cache`` (bfloat16, 4x2) donated: (deleted, warned)."""
    namespace = {"jax": jax, "jnp": jnp}
    exec(textwrap.dedent(source), namespace)  # the test's own program, not analysed code
    step = jax.jit(namespace["step"], donate_argnums=(1,))
    cache = jnp.ones((4, 2), jnp.bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = step(jnp.ones(3), cache)
        jax.block_until_ready(out)
    warned = any("not usable" in str(w.message) for w in caught)
    return cache.is_deleted(), warned


@pytest.mark.parametrize("source", [RESTORED_BY_NAMES, RESTORED_INLINE, RESTORED_BY_LAX],
                         ids=["by-names", "inline", "lax"])
def test_an_output_restored_to_the_parameters_dtype_and_shape_takes_its_buffer(source):
    assert _verdict(source) == PRESERVED
    assert _run_donated(source) == (True, False)


@pytest.mark.parametrize("source,verdict", [
    (SHAPE_ONLY, NONE), (METADATA_READ_TOO_LATE, NONE),
], ids=["shape-only", "metadata-read-after-the-rebinding"])
def test_a_half_restore_is_not_worth_donating(source, verdict):
    assert _verdict(source) == verdict
    deleted, _ = _run_donated(source)  # jax 0.10.2 on CPU lets XLA decide, without a warning here
    assert not deleted


def test_a_parameter_read_only_for_its_metadata_is_not_proved_worth_it():
    assert _verdict(METADATA_ONLY) != PRESERVED

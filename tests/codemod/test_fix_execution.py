"""Every fixed form runs under real JAX (CPU): same results, donated inputs deleted.

The fixed source of each runnable case in fix_cases.py is executed; its
``call`` is evaluated once on the original module and once on the fixed
one, each with fresh inputs ``x``, ``y``, ``z``.  The results must be equal,
the fixed run must delete exactly the inputs the original run deleted plus
the ones the fixes donate.
"""

from __future__ import annotations

import warnings

import pytest
from fix_cases import FIX_CASES, fixes_of, source_of

from jaxmem.codemod import add_donations

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

RUNNABLE = [pytest.param(b, f, o, c, id=i) for i, b, f, a, o, c in FIX_CASES if c is not None]


def _inputs(pmapped: bool) -> dict:
    shape = (jax.device_count(), 4) if pmapped else (4,)
    return {name: jnp.full(shape, float(k + 1)) + jnp.arange(4.0) for k, name in enumerate("xyz")}


def _run(source: str, call: str):
    namespace: dict = {"__name__": "fixed_module"}
    inputs = _inputs(pmapped="pmap" in source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # jax.experimental.pjit
        exec(compile(source, "fixed_module.py", "exec"), namespace)
        result = eval(call, namespace, dict(inputs))
    return jax.tree_util.tree_map(np.asarray, result), inputs


@pytest.mark.parametrize(("before", "fixes", "options", "call"), RUNNABLE)
def test_fixed_source_runs_and_donates(before, fixes, options, call):
    original = source_of(before).lstrip("\ufeff")
    fixed = add_donations(source_of(before), fixes_of(*fixes), **options).source.lstrip("\ufeff")
    assert fixed != original

    expected, before_inputs = _run(original, call)
    donated_before = {name for name, array in before_inputs.items() if array.is_deleted()}

    got, inputs = _run(fixed, call)
    jax.tree_util.tree_map(np.testing.assert_array_equal, got, expected)
    donated_after = {name for name, array in inputs.items() if array.is_deleted()}
    assert donated_after == donated_before | {fix[2] for fix in fixes}

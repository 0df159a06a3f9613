"""An optimizer made by a helper of the same file (``tx = make_optimizer(config)``)
is judged by what the helper returns: when every ``return`` gives a standard optax
transform (optax 0.2.8: its ``init`` makes new buffers only, see
``tests/lint/test_array_api_facts.py``), ``tx.init(params)`` shares nothing with
``params`` and the step's donations are high.  A helper that may return anything
else (a transform of its own that keeps the parameters) leaves them medium, and
forcing the donation crashes."""

import pytest

from fix_runs import crashes_when_forced, fix_and_rerun, report_of

pytest.importorskip("optax")

PROGRAM = """\
import functools

import jax
import jax.numpy as jnp
import optax


def keep_params():
    return optax.GradientTransformation(lambda p: {"start": p}, lambda u, s, p=None: (u, s))


def make_optimizer(lr, clip):
    if clip:
        return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(lr))
    tx = optax.adam(lr)
    return tx


@functools.partial(jax.jit, static_argnums=3)  # the step
def step(params, opt_state, batch, tx):
    grads = jax.grad(lambda p: ((p["w"] * batch) ** 2).sum())(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def main():
    tx = MAKER
    params = {"w": jnp.ones((4,)) * 2}
    opt_state = tx.init(params)
    for i in range(3):
        params, opt_state = step(params, opt_state, jnp.arange(4.0) * i, tx)
    print(round(float(params["w"].sum()), 4))


main()
"""

UNDONATED = "@functools.partial(jax.jit, static_argnums=3)  # the step"
DONATED = "@functools.partial(jax.jit, static_argnums=3, donate_argnums=(0, 1))  # the step"


def _confidences(program: str) -> dict:
    return {f.parameter_name: f.confidence.value for f in report_of(program).findings if f.code == "JXM001"}


@pytest.mark.parametrize("maker", ["make_optimizer(1e-2, True)", "make_optimizer(1e-2, False)"])
def test_a_helper_that_returns_standard_transforms_makes_the_step_high_and_the_fix_runs(tmp_path, maker):
    program = PROGRAM.replace("MAKER", maker)
    assert _confidences(program) == {"params": "high", "opt_state": "high"}
    fixed = fix_and_rerun(tmp_path, program).read_text()
    assert DONATED in fixed, fixed


def test_a_helper_that_may_return_a_transform_keeping_the_params_stays_medium(tmp_path):
    program = PROGRAM.replace("MAKER", "keep_params()")
    found = _confidences(program)
    assert found.get("params") != "high" and found.get("opt_state") != "high", found
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED, error="donate")

"""A jitted body that builds its outputs through the file's own functions
(``return sgd(params, grads, lr)``, ``cache = _write(cache, new)``): each such
call passes its arguments on as the callee's own verdicts say, so an update made
by a helper is as proved as one written inline, and one a helper reduces
(``jnp.sum``) reaches no output.  Only a function its scope binds once and
nothing else, undecorated or only jitted, is read this way; a parameter, a
local or a rebinding of the same name hides it, and then the call stays one
jaxmem does not know (jax 0.10.2, CPU)."""

import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, load, report_of, step_confidences

jax = pytest.importorskip("jax")

PROGRAM = """
import functools
import warnings

import jax
import jax.numpy as jnp

warnings.simplefilter("error")  # "Some donated buffers were not usable" fails the run


def sgd(params, grads, lr):
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


@functools.partial(jax.jit, static_argnums=(2,))
def write(cache, rows, start):
    return jax.lax.dynamic_update_slice(cache, rows, (start, 0))


def loss(params, batch):
    return jnp.mean((batch @ params["w"]) ** 2)


@jax.jit
def train_step(params, cache, batch):
    grads = jax.grad(loss)(params, batch)
    return sgd(params, grads, 0.1), write(cache, batch, 0)


def main():
    params = {"w": jnp.ones((3, 2))}
    cache = jnp.zeros((8, 3))
    params, cache = train_step(params, cache, jnp.ones((4, 3)))
    print(round(float(params["w"].sum()), 4), float(cache.sum()))


if __name__ == "__main__":
    main()
"""


def test_helper_updates_are_high_and_the_fix_runs_with_both_donated(tmp_path):
    assert step_confidences(PROGRAM, "train_step") == {"params": "high", "cache": "high"}
    path = fix_and_rerun(tmp_path, PROGRAM)
    assert "donate_argnums=(0, 1)" in path.read_text()
    fixed = load(path)
    params, cache = {"w": jax.numpy.ones((3, 2))}, jax.numpy.zeros((8, 3))
    fixed["train_step"](params, cache, jax.numpy.ones((4, 3)))
    assert params["w"].is_deleted() and cache.is_deleted()


def test_without_the_helper_summaries_the_calls_would_be_unknown(tmp_path):
    """The same update through a parameter named like the helper: nothing says what it does."""
    hidden = PROGRAM.replace("def train_step(params, cache, batch):", "def train_step(params, cache, batch, sgd=sgd):")
    confidences = step_confidences(hidden, "train_step")
    assert confidences == {"params": "medium", "cache": "high"}


@pytest.mark.parametrize("rebinding", [
    "sgd = jax.jit(sgd)\n",  # bound twice at the top of the module
    "from optax import sgd  # noqa: F811\n",
])
def test_a_name_bound_twice_is_not_read_as_the_helper(rebinding):
    program = PROGRAM.replace("\n\n@functools.partial", f"\n\n{rebinding}\n\n@functools.partial", 1)
    assert step_confidences(program, "train_step")["params"] == "medium"


def test_a_helper_that_reduces_the_argument_takes_nothing_and_forcing_it_warns(tmp_path):
    program = PROGRAM.replace("return sgd(params, grads, 0.1), write(cache, batch, 0)",
                              "return total(params), write(cache, batch, 0)").replace(
        "def loss(params, batch):", "def total(tree):\n    return jnp.sum(tree[\"w\"])\n\n\n"
                                    "def loss(params, batch):").replace(
        'print(round(float(params["w"].sum()), 4), float(cache.sum()))', "print(float(params), float(cache.sum()))")
    report = report_of(program)
    assert [f.parameter_name for f in report.findings if f.code == "JXM001"] == ["cache"]
    assert any(s.parameter == "params" and "not worth donating" in s.reason for s in report.refusals)
    crashes_when_forced(tmp_path, program, "@jax.jit\ndef train_step",
                        "@functools.partial(jax.jit, donate_argnums=(0, 1))\ndef train_step",
                        error="donated buffers were not usable")


def test_a_recursive_helper_is_read_once_and_not_forever():
    program = PROGRAM.replace(
        "def sgd(params, grads, lr):\n    return jax.tree.map(lambda p, g: p - lr * g, params, grads)",
        "def sgd(params, grads, lr, n=2):\n"
        "    if n == 0:\n        return params\n"
        "    return sgd(jax.tree.map(lambda p, g: p - lr * g, params, grads), grads, lr, n - 1)")
    assert step_confidences(program, "train_step")["params"] == "high"


FACTORIES = """
import jax


def sgd(params, grads):
    return jax.tree.map(lambda p, g: p - g, params, grads)


def make(sgd):
    @jax.jit
    def step(params, grads):
        return sgd(params, grads)  # make's parameter, not the module's function
    return step


def make_local():
    def sgd(params, grads):
        return jax.tree.map(lambda p, g: p - g, params, grads)

    @jax.jit
    def step(params, grads):
        return sgd(params, grads)
    return step


def main(grads):
    step = make(lambda p, g: 0.0)
    other = make_local()
    return step({"w": jax.numpy.ones(3)}, grads), other({"w": jax.numpy.ones(3)}, grads)
"""


def test_a_made_jit_reads_the_functions_where_its_body_is_written():
    from jaxmem.lint.engine import facts_for_file
    from jaxmem.settings import Settings

    facts = facts_for_file("train.py", FACTORIES, Settings())
    outputs = {(d.line, d.made_by): dict(d.outputs) for d in facts.definitions}
    assert outputs[(10, "make")]["params"] == "maybe"  # whatever make is given
    assert outputs[(20, "make_local")]["params"] == "preserved"
    assert outputs[(10, None)]["params"] == "maybe" and outputs[(20, None)]["params"] == "preserved"


MADE_WITH_OPTAX = """
import jax
import optax


def make(lr):
    opt_init, opt_update = optax.adam(lr)

    @jax.jit
    def step(params, opt_state, grads):
        updates, opt_state = opt_update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state
    return step


def main(params, grads):
    step = make(1e-3)
    opt_state = optax.adam(1e-3).init(params)
    return step(params, opt_state, grads)
"""


def test_a_made_jit_reads_the_optax_update_its_factory_binds():
    from jaxmem.lint.engine import facts_for_file
    from jaxmem.settings import Settings

    facts = facts_for_file("train.py", MADE_WITH_OPTAX, Settings())
    (made,) = [d for d in facts.definitions if d.made_by == "make"]
    assert dict(made.outputs)["opt_state"] == "preserved"

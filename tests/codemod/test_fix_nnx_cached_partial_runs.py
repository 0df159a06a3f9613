"""flax's performance guide (``docs_nnx/guides/performance.ipynb``, flax 0.12.8)
binds the step's nnx objects once with ``nnx.cached_partial(train_step, model,
optimizer, metrics)`` and calls the partial in the loop.  Each call of the partial
is a call of ``train_step`` with those objects first: nnx.jit returns their arrays
and writes them back (the partial holds the objects, whose Variables get the new
arrays), so donating them is as safe as in a direct call.  The default fix
donates all three, the fixed program trains the same, and the arrays each object
was made with are deleted.  A plain pytree bound by the partial is passed again
by every call: it is never proposed, and forcing its donation crashes."""

import pytest

from fix_runs import crashes_when_forced, fix_and_rerun_recorded, report_of, step_confidences

pytest.importorskip("flax")
pytest.importorskip("optax")

PROGRAM = """\
import functools

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, din, dmid, dout, rngs: nnx.Rngs):
        self.linear = nnx.Linear(din, dmid, rngs=rngs)
        self.bn = nnx.BatchNorm(dmid, use_running_average=False, rngs=rngs)
        self.linear_out = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        return self.linear_out(nnx.relu(self.bn(self.linear(x))))


model = Model(2, 16, 3, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))


@nnx.jit  # the step
def train_step(model, optimizer, metrics, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    metrics.update(loss=loss)
    return loss


for i in range(3):
    x, y = jnp.ones((8, 2)) * i, jnp.zeros((8, 3))
    loss = train_step(model, optimizer, metrics, x, y)

cached_train_step = nnx.cached_partial(train_step, model, optimizer, metrics)
for i in range(3):
    x, y = jnp.ones((8, 2)) * i, jnp.zeros((8, 3))
    loss = cached_train_step(x, y)

graphdef, state = nnx.split((model, optimizer, metrics))
print("loss", round(float(loss), 5), "metric", round(float(metrics.compute()["loss"]), 5))
"""

# The classes whose first instance the run records, to see the arrays each was made with.
RECORDED = {"model": "BatchNorm", "optimizer": "Optimizer", "metrics": "MultiMetric"}

UNDONATED = "@nnx.jit  # the step"
DONATED = "@functools.partial(nnx.jit, donate_argnums=(0, 1, 2))  # the step"



def _confidences(program: str) -> dict:
    return step_confidences(program, "train_step")


def test_the_performance_guide_is_donated_by_the_default_fix_and_trains_the_same(tmp_path):
    assert _confidences(PROGRAM) == {"model": "high", "optimizer": "high", "metrics": "high"}
    fix_and_rerun_recorded(tmp_path, PROGRAM, RECORDED, DONATED)


def test_the_partial_handed_on_keeps_the_objects_undonated():
    program = PROGRAM.replace("    loss = cached_train_step(x, y)", "    loss = run(cached_train_step, x, y)")
    program = program.replace("cached_train_step = nnx", "run = lambda f, *a: f(*a)\ncached_train_step = nnx")
    found = _confidences(program)
    assert all(confidence != "high" for confidence in found.values()), found


PYTREE = """\
import functools

import jax
import jax.numpy as jnp
from flax import nnx


@nnx.jit  # the step
def step(model, params, x):
    return model(x), jax.tree.map(lambda p: p * 2, params)


model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
params = {"b": jnp.ones((2,))}
cached = nnx.cached_partial(step, model, params)
for i in range(3):
    out, doubled = cached(jnp.ones((1, 2)) * i)
print(float(out.sum()), float(doubled["b"].sum()))
"""


def test_a_pytree_bound_by_the_partial_is_never_proposed_and_forcing_it_crashes(tmp_path):
    found = {f.parameter_name: f.confidence.value for f in report_of(PYTREE).findings if f.code == "JXM001"}
    assert found.get("params") is None, found
    crashes_when_forced(tmp_path, PYTREE, UNDONATED, "@functools.partial(nnx.jit, donate_argnums=1)  # the step")


def test_an_array_taken_out_between_the_partial_and_its_calls_keeps_the_model_undonated(tmp_path):
    program = PROGRAM.replace(
        "cached_train_step = nnx.cached_partial(train_step, model, optimizer, metrics)\n",
        "cached_train_step = nnx.cached_partial(train_step, model, optimizer, metrics)\n"
        "kernel = model.linear_out.kernel[...]\n").replace(
        'print("loss"', 'print("kernel", round(float(kernel.sum()), 5))\nprint("loss"')
    found = _confidences(program)
    assert found["model"] != "high" and found["optimizer"] == "high", found
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED)


@pytest.mark.parametrize("change", [
    ("    loss = cached_train_step(x, y)", "    loss = (lambda: cached_train_step(x, y))()"),  # in a lambda
    ("    loss = cached_train_step(x, y)", "    loss = cached_train_step(x, y)\n    print(cached_train_step.func)"),
    ("cached_train_step = nnx", "cached_train_step = None\ncached_train_step = nnx"),  # bound twice
])
def test_a_partial_whose_calls_are_not_all_plain_calls_here_leaves_the_objects_medium(change):
    program = PROGRAM.replace(*change)
    assert change[1] in program
    found = _confidences(program)
    assert found and all(confidence != "high" for confidence in found.values()), found


def test_the_partial_made_and_called_in_a_function_is_a_call_there():
    header, rest = PROGRAM.split("model = Model(", 1)
    objects, rest = ("model = Model(" + rest).split("\n\n\n@nnx.jit", 1)
    step, loops = ("@nnx.jit" + rest).split("\n\n\nfor i", 1)
    body = objects + "\n" + "for i" + loops
    program = header + step + "\n\n\ndef main():\n" + "".join(
        "    " + line if line.strip() else line for line in body.splitlines(keepends=True)) + "\n\nmain()\n"
    assert "def main():\n    model = Model(" in program and "    cached_train_step = nnx" in program
    assert _confidences(program) == {"model": "high", "optimizer": "high", "metrics": "high"}


def test_an_object_both_bound_and_passed_again_is_passed_twice():
    # flax's transforms_test: ``cached_f = nnx.compat.cached_partial(f, m)`` then ``cached_f(m)``
    program = """\
from flax import nnx


@nnx.jit
def f(cached_m, m):
    return cached_m


m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
cached_f = nnx.compat.cached_partial(f, m)
cached_m = cached_f(m)
"""
    findings = [f for f in report_of(program).findings if f.code == "JXM001"]
    assert not [f for f in findings if f.confidence.value == "high"], findings
    compat = PROGRAM.replace("nnx.cached_partial(", "nnx.compat.cached_partial(")
    assert _confidences(compat) == {"model": "high", "optimizer": "high", "metrics": "high"}


def test_an_object_rebound_after_the_partial_is_made_is_not_the_one_it_passes():
    # the partial keeps the first model, whose array is read at the end: the calls of the
    # partial are not taken as calls with the second model (FactExtractor._bound_unchanged),
    # and the first model's own uses keep it medium too
    program = PROGRAM.replace(
        "cached_train_step = nnx.cached_partial(train_step, model, optimizer, metrics)\n",
        "cached_train_step = nnx.cached_partial(train_step, model, optimizer, metrics)\n"
        "kernel = model.linear_out.kernel[...]\n"
        "model = Model(2, 16, 3, rngs=nnx.Rngs(1))\n").replace(
        'print("loss"', 'print("kernel", round(float(kernel.sum()), 5))\nprint("loss"')
    found = _confidences(program)
    assert found.get("model") != "high", found

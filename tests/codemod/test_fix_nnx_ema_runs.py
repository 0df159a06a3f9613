"""flax's EMA recipe (``nnx.EMA``'s own docstring, flax 0.12.8): ``nnx.EMA(model)``
copies the model's Variables (``jnp.copy``) and keeps no reference to the model;
``ema.apply_to(model)`` is a model whose Variables are the EMA's, which nnx writes
back like the model's.  So the train step's model, optimizer and EMA are donated by
the default fix, the fixed program evaluates the same, and the arrays each was made
with are deleted.  An array taken out through the EMA's view and read after the
step keeps the EMA undonated; forcing the donation crashes."""

import pytest

from fix_runs import crashes_when_forced, fix_and_rerun_recorded, step_confidences

pytest.importorskip("flax")
pytest.importorskip("optax")

PROGRAM = """\
import functools

import jax
import jax.numpy as jnp
import optax
from flax import nnx


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


@nnx.jit  # the step
def train_step(model, optimizer, ema, x, y):
    grads = nnx.grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    ema.update(model)


@nnx.jit
def eval_step(model, x, y):
    return loss_fn(model, x, y)


def main():
    x, y = jnp.arange(4.0).reshape(2, 2), jnp.ones((2, 2))
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    ema = nnx.EMA(model, decay=0.9)
    ema_model = ema.apply_to(model)
    TAKEN
    for _ in range(5):
        train_step(model, optimizer, ema, x, y)
    print("eval", round(float(eval_step(ema_model, x, y)), 5))
    READ


main()
"""

# The classes whose first instance the run records, to see the arrays each was made with.
RECORDED = {"model": "Linear", "optimizer": "Optimizer", "ema": "EMA"}

UNDONATED = "@nnx.jit  # the step"
DONATED = "@functools.partial(nnx.jit, donate_argnums=(0, 1, 2))  # the step"



def _confidences(program: str) -> dict:
    return step_confidences(program, "train_step")


def test_the_ema_recipe_is_donated_by_the_default_fix_and_evaluates_the_same(tmp_path):
    program = PROGRAM.replace("    TAKEN\n", "").replace("    READ\n", "")
    assert _confidences(program) == {"model": "high", "optimizer": "high", "ema": "high"}
    fix_and_rerun_recorded(tmp_path, program, RECORDED, DONATED)


def test_an_array_taken_through_the_emas_view_keeps_the_ema_undonated(tmp_path):
    program = PROGRAM.replace("TAKEN", "original = ema_model.kernel[...]").replace(
        "READ", 'print("moved", bool(jnp.abs(ema_model.kernel[...] - original).sum() > 0))')
    found = _confidences(program)
    # the view holds the EMA's Variables (and the model's untracked ones): both stay below high
    assert found["ema"] != "high" and found["model"] != "high" and found["optimizer"] == "high", found
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED)

"""``nnx.ModelAndOptimizer(model, tx)`` as flax's notebooks write it (machine
translation, digits diffusion): the optimizer holds the model's very Variables
and new moments of its own, so it owns its arrays exactly when the model does
(flax 0.12.8, optax 0.2.8).  The default ``jaxmem-fix`` donates the optimizer
of an ``nnx.jit`` step and the view of the model it also receives; the fixed
program prints the same (a "Some donated buffers were not usable" warning is
an error here) and the optimizer's old arrays are deleted.  A result of the
model taken after the last step stays readable: nothing donates it any more.

Where an array of the model is kept outside its Variables and read after the
step, and the step reaches the model only through the optimizer, donating the
optimizer deletes that array: the default fix leaves it alone, and the
donation, when forced, really crashes."""

import sys

import pytest
from fix_runs import crashes_when_forced, fix, fix_and_rerun, load, run, tool

pytest.importorskip("flax")
pytest.importorskip("optax")

PROGRAM = """\
import warnings

warnings.filterwarnings("error", message="Some donated buffers were not usable")

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, din, dout, *, rngs):
        self.linear = nnx.Linear(din, dout, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


@nnx.jit
def train_step(model, optimizer, batch):
    def loss_fn(model):
        return jnp.mean((model(batch) - 1.0) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(grads)
    return loss


@nnx.jit
def eval_step(model, batch):
    return jnp.mean(model(batch))


model = MLP(4, 4, rngs=nnx.Rngs(0))
train_model = nnx.view(model, deterministic=False)
eval_model = nnx.view(model, deterministic=True)
optimizer = nnx.ModelAndOptimizer(model, optax.adamw(1e-2))
batch = jnp.ones((8, 4))
for _ in range(5):
    loss = train_step(train_model, optimizer, batch)
print(round(float(loss), 4))
print(round(float(eval_step(eval_model, batch)), 4))
print(round(float(eval_model(batch).sum()), 4))
"""

# The step reaches the model only through the optimizer, and an array of the
# model taken before the loop is read after it.
THROUGH_THE_OPTIMIZER = PROGRAM.replace(
    "def train_step(model, optimizer, batch):\n", "def train_step(optimizer, batch):\n    model = optimizer.model\n",
).replace(
    "train_step(train_model, optimizer, batch)", "train_step(optimizer, batch)",
).replace(
    "batch = jnp.ones((8, 4))\n", "batch = jnp.ones((8, 4))\nkernel = model.linear.kernel[...]\n",
).replace(
    "print(round(float(loss), 4))\n", "print(round(float(loss), 4))\nprint(round(float(kernel.sum()), 4))\n",
)


def test_model_and_optimizer_of_an_owned_model_is_donated_and_runs(tmp_path):
    path = fix_and_rerun(tmp_path, PROGRAM)
    fixed = path.read_text()
    # the view of the model is an nnx object too (nnx.jit returns its arrays): donated with the optimizer
    assert "@partial(nnx.jit, donate_argnums=(0, 1))\ndef train_step" in fixed
    assert "@partial(nnx.jit, donate_argnums=0)\ndef eval_step" in fixed
    # record the optimizer's first arrays where the analysis never looked
    path.write_text(fixed.replace("for _ in range(5):", "OLD = jax.tree.leaves(nnx.state(optimizer.opt_state))\nfor _ in range(5):"))
    old = load(path)["OLD"]
    assert old and all(leaf.is_deleted() for leaf in old)


def test_model_array_kept_outside_its_variables_is_left_alone_and_crashes_when_forced(tmp_path):
    path, result = fix(tmp_path, THROUGH_THE_OPTIMIZER)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == THROUGH_THE_OPTIMIZER
    crashes_when_forced(tmp_path, THROUGH_THE_OPTIMIZER, "@nnx.jit\ndef train_step",
                        "@nnx.jit(donate_argnums=0)\ndef train_step")


# flax's miniGPT notebook: the step donates the model and optimizer, and a helper
# called in a loop reaches them as globals.  nnx writes the new arrays back into
# their Variables, so reading the model afterwards is fine: no JXM104.
DONATED_GLOBALS = """\
import warnings

warnings.filterwarnings("error", message="Some donated buffers were not usable")

import jax.numpy as jnp
import optax
from flax import nnx


@nnx.jit(donate_argnums=(0, 1))
def train_step(model, optimizer, batch):
    grads = nnx.grad(lambda m: jnp.mean((m(batch) - 1.0) ** 2))(model)
    optimizer.update(model, grads)


def loop_step(batch):
    train_step(model, optimizer, batch)


model = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
first = model.kernel.get_value()
for _ in range(3):
    loop_step(jnp.ones((2, 4)))
print(first.is_deleted(), round(float(model(jnp.ones((1, 4))).sum()), 4))
"""


def test_a_donated_module_that_globals_still_name_stays_usable_and_is_not_reported(tmp_path):
    ran = run(sys.executable, "-c", DONATED_GLOBALS, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("True ")  # donated: the first kernel is gone, the model reads the new one
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(DONATED_GLOBALS)
    checked = run(tool("jaxmem"), "check", "--min-confidence", "low", "train.py", cwd=tmp_path)
    assert "JXM104" not in checked.stdout and "JXM101" not in checked.stdout, checked.stdout

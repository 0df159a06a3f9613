"""An ``nnx.jit`` step that only reads a Module (an eval or predict step) as flax's
MNIST tutorial writes it: nnx.jit returns every array of the Module and writes
them back, so without donation each call makes a copy of the whole model, even
when the body changes nothing (flax 0.12.8, jax 0.10.2, in graph mode and in
tree mode, with and without graph updates).  Donated, the outputs take the old
buffers and the Module stays usable.  So a Module proved to be made by an nnx
class, whose arrays nothing else holds, is donated by the default
``jaxmem-fix``: the fixed program prints the same (a "Some donated buffers
were not usable" warning is an error here) and the model's old arrays are
deleted after the eval step.

Where an array of the model is kept outside its Variables and read after the
eval step, donating the model deletes it: the default fix leaves it alone, and
the donation, when forced, really crashes.  A pytree that is no nnx object is
deleted by a donating ``nnx.jit`` as by ``jax.jit``: it is not proposed."""

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
        self.bn = nnx.BatchNorm(dout, rngs=rngs)

    def __call__(self, x):
        return self.bn(self.linear(x))


@nnx.jit
def train_step(model, optimizer, batch):
    def loss_fn(model):
        return jnp.mean((model(batch) - 1.0) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def eval_step(model, batch):
    return jnp.mean(model(batch))


@nnx.jit(graph=False, graph_updates=False)
def pred_step(model, batch):
    return model(batch).argmax(axis=1)


model = MLP(4, 4, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
batch = jnp.arange(32.0).reshape(8, 4) / 32
for epoch in range(3):
    model.train()
    for _ in range(4):
        loss = train_step(model, optimizer, batch)
    model.eval()
    print(epoch, round(float(loss), 4), round(float(eval_step(model, batch)), 4))
    print(pred_step(model, batch).tolist())
print(round(float(model(batch).sum()), 4))
"""

# An array of the model taken before the eval step and read after it.
KEPT_KERNEL = PROGRAM.replace(
    "    model.eval()\n",
    "    model.eval()\n    kernel = model.linear.kernel[...]\n",
).replace(
    "    print(pred_step(model, batch).tolist())\n",
    "    print(pred_step(model, batch).tolist())\n    print(round(float(kernel.sum()), 4))\n",
)

# The same step with a pytree of arrays that is no nnx object, made by a class called
# with no argument (as a Module is): only its base tells it apart.
PYTREE = """\
import dataclasses

import flax.struct
import jax
import jax.numpy as jnp
from flax import nnx


@flax.struct.dataclass
class Params:
    w: jax.Array = dataclasses.field(default_factory=lambda: jnp.ones((4, 4)))


@nnx.jit
def eval_step(params, batch):
    return batch @ params.w


params = Params()
print(float(eval_step(params, jnp.ones((4, 4))).sum()))
print(float(params.w.sum()))
"""


def test_an_eval_step_module_is_donated_and_runs(tmp_path):
    path = fix_and_rerun(tmp_path, PROGRAM)
    fixed = path.read_text()
    assert "@partial(nnx.jit, donate_argnums=0)\ndef eval_step" in fixed
    assert "@nnx.jit(graph=False, graph_updates=False, donate_argnums=0)\ndef pred_step" in fixed
    # record the model's arrays after training, where the analysis never looked
    path.write_text(fixed.replace('print(round(float(model(batch).sum()), 4))\n',
                                  'OLD = jax.tree.leaves(nnx.state(model))\nprint(round(float(eval_step(model, batch)), 4))\n'))
    old = load(path)["OLD"]
    assert old and all(leaf.is_deleted() for leaf in old)


def test_a_model_array_kept_outside_its_variables_is_left_alone_and_crashes_when_forced(tmp_path):
    path, result = fix(tmp_path, KEPT_KERNEL)
    assert "donate_argnums=0)\ndef eval_step" not in path.read_text()
    crashes_when_forced(tmp_path, KEPT_KERNEL, "@nnx.jit\ndef eval_step", "@nnx.jit(donate_argnums=0)\ndef eval_step")


def test_a_pytree_that_is_no_nnx_object_is_not_proposed(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(PYTREE)
    checked = run(tool("jaxmem"), "check", "--min-confidence", "low", "train.py", cwd=tmp_path)
    assert "JXM001" not in checked.stdout, checked.stdout
    crashes_when_forced(tmp_path, PYTREE, "@nnx.jit\ndef eval_step", "@nnx.jit(donate_argnums=0)\ndef eval_step")


def test_a_module_class_of_another_file_is_an_nnx_object(tmp_path):
    models, train = PROGRAM.split("\n\n@nnx.jit\ndef train_step", 1)
    (tmp_path / "models.py").write_text(models + "\n")
    program = models.split("class MLP", 1)[0] + "from models import MLP\n\n\n@nnx.jit\ndef train_step" + train
    path = fix_and_rerun(tmp_path, program)
    assert "@partial(nnx.jit, donate_argnums=0)\ndef eval_step" in path.read_text()

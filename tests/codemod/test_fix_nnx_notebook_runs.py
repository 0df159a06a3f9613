"""A notebook makes a new ``model`` in every section (flax's ``nnx_basics``
notebook binds it eight times, once as ``nnx.merge(...)``).  Each plain
top-level assignment makes another object, so the object an ``nnx.jit`` step
receives is judged by the statements between its assignment and the next one
(and by every def, which may run at any time); a name a jitted function binds
for itself (``model = nnx.merge(graphdef, state)`` inside it) is that
function's local, not the notebook's ``model``.  The default ``jaxmem-fix``
donates the trained model and its optimizer; the fixed program prints the same,
and the arrays it was made with are deleted (flax 0.12.8, optax 0.2.8, jax
0.10.2).  Where the trained object's parameters are also held in a name read
after the step, it is left alone, and the donation, when forced, really
crashes.

A notebook's objects trained by its own functions (``train_one_epoch()``
reading ``model`` as a global) are the notebook's: donated the same way.  The
same code as a module is left alone: another file may import ``model`` and
hold its arrays while it calls ``train_one_epoch()``, and then it crashes."""

import sys

import pytest
from fix_runs import (
    as_notebook,
    crashes_when_forced,
    fix,
    fix_and_rerun,
    left_alone_then_crashes,
    load,
    notebook_code,
    run,
)

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
pytest.importorskip("optax")

# The imports and model of every program below.
MODEL_MODULE = """
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.lin1 = nnx.Linear(4, 8, rngs=rngs)
        self.lin2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.lin2(nnx.relu(self.lin1(x)))


"""

# The training step of SECTIONS and MODES.
TRAIN_STEP = """
@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss
"""

SECTIONS = MODEL_MODULE + TRAIN_STEP + """

@jax.jit
def pure_forward(graphdef, state, x):
    model = nnx.merge(graphdef, state)
    return model(x)


# a first model, only looked at
model = MLP(nnx.Rngs(1))
print(model(jnp.ones((1, 4))).shape)

# a new model, trained
model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
x, y = jnp.ones((8, 4)), jnp.zeros((8, 2))
for _ in range(3):
    loss = train_step(model, optimizer, x, y)
print(round(float(loss), 5))

# the functional API, then a model rebuilt from its state
graphdef, state = nnx.split(model)
print(pure_forward(graphdef, state, x).shape)
model = nnx.merge(graphdef, state)
print(round(float(model(x).sum()), 5))
"""

# The trained model's parameter arrays, taken before the loop, are read after it.
HELD = SECTIONS.replace(
    "for _ in range(3):\n",
    "before = jax.tree.leaves(nnx.state(model, nnx.Param))\nfor _ in range(3):\n",
).replace(
    "print(round(float(loss), 5))\n",
    "print(round(float(loss), 5))\nprint(round(float(before[0].sum()), 5))\n",
)


def _trained_once(namespace: dict):
    """A new model of the fixed program, after one ``train_step`` that must delete its
    and its optimizer's old arrays (the donation took)."""
    model = namespace["MLP"](nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, namespace["optax"].adam(1e-2), wrt=nnx.Param)
    old = jax.tree.leaves(nnx.state((model, optimizer)))
    namespace["train_step"](model, optimizer, jax.numpy.ones((8, 4)), jax.numpy.zeros((8, 2)))
    assert old and all(leaf.is_deleted() for leaf in old)
    return model


def test_the_trained_model_of_a_notebook_that_rebinds_model_is_donated_and_runs_the_same(tmp_path):
    path = fix_and_rerun(tmp_path, SECTIONS)
    assert "@partial(nnx.jit, donate_argnums=(0, 1))" in path.read_text()

    namespace = load(path)
    model = _trained_once(namespace)
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(nnx.state(model)))


def test_a_trained_model_whose_parameters_are_read_after_the_step_is_left_alone_and_crashes_when_forced(tmp_path):
    assert HELD != SECTIONS and "before = jax.tree.leaves(nnx.state(model, nnx.Param))" in HELD
    path, result = fix(tmp_path, HELD)
    assert "donate_argnums=(0" not in path.read_text(), result.stdout

    crashes_when_forced(tmp_path, "import functools\n" + HELD, "@nnx.jit\ndef train_step",
                        "@functools.partial(nnx.jit, donate_argnums=0)\ndef train_step")


# The objects are made at the top level and trained by functions that read them
# as globals (flax's ViT and machine-translation notebooks: ``train_one_epoch()``,
# ``evaluate_model()``).
IN_FUNCTIONS = MODEL_MODULE + """
@nnx.jit
def train_step(model, optimizer, metrics, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    metrics.update(loss=loss)
    optimizer.update(model, grads)


model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))
batches = [(jnp.ones((8, 4)) * i, jnp.zeros((8, 2))) for i in range(3)]


def train_one_epoch():
    metrics.reset()
    for x, y in batches:
        train_step(model, optimizer, metrics, x, y)
    print(round(float(metrics.compute()["loss"]), 5))


for epoch in range(2):
    train_one_epoch()
"""

# A function of the notebook takes the model's arrays out before training.
SNAPSHOT = IN_FUNCTIONS.replace(
    "for epoch in range(2):\n",
    "def snapshot():\n    return jax.tree.leaves(nnx.state(model))\n\n\nfirst = snapshot()\n"
    "for epoch in range(2):\n",
) + "print(round(float(first[0].sum()), 5))\n"


def test_objects_a_notebooks_functions_read_as_globals_are_donated_and_it_trains_the_same(tmp_path):
    expected = run(sys.executable, "-c", IN_FUNCTIONS, cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    path, result = fix(tmp_path, as_notebook(IN_FUNCTIONS), name="train.ipynb")
    assert result.returncode == 1, result.stdout + result.stderr  # changed
    fixed = tmp_path / "fixed.py"
    fixed.write_text(notebook_code(path))
    assert "@partial(nnx.jit, donate_argnums=(0, 1, 2))" in fixed.read_text()
    after = run(sys.executable, "fixed.py", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == expected.stdout, after.stderr

    namespace = load(fixed)
    model, optimizer, metrics = namespace["model"], namespace["optimizer"], namespace["metrics"]
    old = jax.tree.leaves(nnx.state((model, optimizer)))
    namespace["train_one_epoch"]()  # (its metrics.reset() puts new arrays in the metrics first)
    assert old and all(leaf.is_deleted() for leaf in old)
    old_metrics = jax.tree.leaves(nnx.state(metrics))
    namespace["train_step"](model, optimizer, metrics, *namespace["batches"][0])
    assert old_metrics and all(leaf.is_deleted() for leaf in old_metrics)


def test_a_global_model_a_notebook_function_takes_the_arrays_of_is_left_alone_and_crashes_when_forced(tmp_path):
    assert SNAPSHOT != IN_FUNCTIONS + "print(round(float(first[0].sum()), 5))\n"
    path, _ = fix(tmp_path, as_notebook(SNAPSHOT), name="train.ipynb")
    assert "donate_argnums=(0" not in notebook_code(path)

    crashes_when_forced(tmp_path, "import functools\n" + SNAPSHOT, "@nnx.jit\ndef train_step",
                        "@functools.partial(nnx.jit, donate_argnums=0)\ndef train_step")


def test_the_same_objects_in_a_module_another_file_imports_are_left_alone_and_crash_when_forced(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(IN_FUNCTIONS)
    (tmp_path / "other.py").write_text(
        "import jax\nfrom flax import nnx\nfrom train import model, train_one_epoch\n\n"
        "before = jax.tree.leaves(nnx.state(model))\ntrain_one_epoch()\nprint(float(before[0].sum()))\n")
    assert run(sys.executable, "other.py", cwd=tmp_path).returncode == 0
    left_alone_then_crashes(tmp_path, "other.py", tmp_path / "train.py", "@nnx.jit\ndef train_step",
                            "@nnx.jit(donate_argnums=(0, 1, 2))\ndef train_step")


# A script with modes (flax's benchmarks/nnx_simple_training.py): each branch makes and
# trains its own model; the object a step receives is judged by what may run after its
# assignment: not the other branch of its ``if``, not what follows a rebinding
# (``model = nnx.merge(...)`` in a later block), and the read of the trained model
# after its last step (nnx wrote the new arrays back into it).
MODES = MODEL_MODULE + TRAIN_STEP + """

@nnx.jit
def eval_step(model, x, y):
    return ((model(x) - y) ** 2).mean()


def main(mode):
    x, y = jnp.ones((8, 4)), jnp.zeros((8, 2))
    if mode in ("nnx", "all"):
        model = MLP(nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
        for _ in range(3):
            train_step(model, optimizer, x, y)
            loss = eval_step(model, x, y)
        print(mode, round(float(loss), 5), round(float(model.lin1.kernel[...].sum()), 5))
    else:
        model = MLP(nnx.Rngs(1))
        kernel = model.lin1.kernel[...]
        print(mode, kernel.shape)
    if mode in ("functional", "all"):
        graphdef, state = nnx.split(MLP(nnx.Rngs(2)))
        model = nnx.merge(graphdef, state)
        print(mode, round(float(model(x).sum()), 5))


for mode in ("nnx", "functional", "all"):
    main(mode)
"""

# A later block of the same run takes the trained model's arrays, steps it again and reads them.
MODES_HELD = MODES.replace(
    "    if mode in (\"functional\", \"all\"):\n",
    "    if mode == \"all\":\n        before = jax.tree.leaves(nnx.state(model, nnx.Param))\n"
    "        train_step(model, optimizer, x, y)\n        print(round(float(before[0].sum()), 5))\n"
    "    if mode in (\"functional\", \"all\"):\n", 1)


def test_the_model_of_one_mode_of_a_script_is_donated_and_runs_the_same(tmp_path):
    path = fix_and_rerun(tmp_path, MODES)
    text = path.read_text()
    assert "@partial(nnx.jit, donate_argnums=(0, 1))\ndef train_step" in text
    assert "@partial(nnx.jit, donate_argnums=0)\ndef eval_step" in text

    namespace = load(path)
    model = _trained_once(namespace)
    old = jax.tree.leaves(nnx.state(model))
    namespace["eval_step"](model, jax.numpy.ones((8, 4)), jax.numpy.zeros((8, 2)))
    assert all(leaf.is_deleted() for leaf in old)
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(nnx.state(model)))


def test_a_later_block_that_takes_the_trained_models_arrays_keeps_it_and_crashes_when_forced(tmp_path):
    assert MODES_HELD != MODES
    path, result = fix(tmp_path, MODES_HELD)
    assert "donate_argnums=(0" not in path.read_text(), result.stdout

    crashes_when_forced(tmp_path, "import functools\n" + MODES_HELD, "@nnx.jit\ndef train_step",
                        "@functools.partial(nnx.jit, donate_argnums=(0, 1))\ndef train_step")

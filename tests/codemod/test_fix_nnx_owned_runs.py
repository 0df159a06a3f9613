"""nnx objects that provably own their arrays are donated by the default fix;
those whose arrays something else may hold are not (flax 0.12.8, optax 0.2.8).

flax's MNIST tutorial as its users write it: a Module made from a PRNG seed and
called once to show its output's shape, ``nnx.Optimizer`` of a standard optax
transform, a ``MultiMetric`` of ``Average``, train and eval views of the model
(``nnx.view``), an ``nnx.jit`` train step and eval step, the final parameters
read after training.  The default ``jaxmem-fix`` donates the model (its
train view), the optimizer and the metrics; the fixed program prints the same
losses, and the arrays each object was made with are deleted (recorded by a
runner the analysis never sees).

Each object below shares its arrays with a value read after the step: donating
it really crashes (the program is run with the model donated), and the default
fix leaves the model alone.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fix_runs import nnx_recording_runner

pytest.importorskip("flax")
pytest.importorskip("optax")

TUTORIAL = """\
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        return self.drop(self.bn(self.lin(x)))


def loss_fn(model, batch):
    return (model(batch) ** 2).mean()


@nnx.jit
def train_step(model, optimizer, metrics, batch):
    loss, grads = nnx.value_and_grad(loss_fn)(model, batch)
    metrics.update(loss=loss)
    optimizer.update(model, grads)


@nnx.jit
def eval_step(model, metrics, batch):
    metrics.update(loss=loss_fn(model, batch))


def main():
    model = Model(nnx.Rngs(0))
    y = model(jnp.ones((1, 4)))
    print(y.shape)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))
    train_model = nnx.view(model, deterministic=False, use_running_average=False)
    eval_model = nnx.view(model, deterministic=True, use_running_average=True)
    for step in range(4):
        train_step(train_model, optimizer, metrics, jnp.arange(8.0).reshape(2, 4) * step)
        if step % 2 == 1:
            print("train", round(float(metrics.compute()["loss"]), 4))
            metrics.reset()
            eval_step(eval_model, metrics, jnp.ones((2, 4)))
            print("eval", round(float(metrics.compute()["loss"]), 4))
            metrics.reset()
    final = jax.tree_util.tree_leaves(nnx.state(model))
    print("final", round(sum(float(leaf.sum()) for leaf in final if jnp.issubdtype(leaf.dtype, jnp.floating)), 4))


main()
"""

# Runs train.py after wrapping the constructors, to see the arrays each object was made with.
RUNNER = nnx_recording_runner({"model": "Linear", "optimizer": "Optimizer", "metrics": "MultiMetric"})

HELD = """\
import functools

import jax
import jax.numpy as jnp
import optax
from flax import nnx

TABLE = jnp.arange(4.0) * 1


class Model(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        return self.lin(x)


class Wrapped(nnx.Module):
    def __init__(self, w):
        self.w = nnx.Param(w)

    def __call__(self, x):
        return x @ self.w[...]


class WithTable(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.table = nnx.Param(TABLE)

    def __call__(self, x):
        return self.lin(x) + self.table[...]


class Bias(nnx.Module):
    def __init__(self):
        self.b = nnx.Param(jnp.arange(4.0) * 1)

    def __call__(self, x):
        return self.b[...]
{steps}

def run(name, form):
    try:
        print(name, form())
    except Exception as error:  # noqa: BLE001
        print(name, "crash", "delete" in str(error) or "donate" in str(error))


{runs}
"""

STEP = """

@nnx.jit  # the step
def step_{i}(model, optimizer, batch):
    grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
    optimizer.update(model, grads)


def form_{i}():
{body}
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    for _ in range(2):
        step_{i}(model, optimizer, jnp.ones((2, 4)))
    return {read}
"""

# name -> (the lines that make ``model`` and what shares its arrays, the value read after the steps)
SHARED = {
    "array-of-a-variable": ("model = Model(nnx.Rngs(0))\nkernel = model.lin.kernel[...]",
                            "round(float(kernel.sum()), 4)"),
    "leaves-taken-before": ("model = Model(nnx.Rngs(0))\nleaves = jax.tree_util.tree_leaves(nnx.state(model))",
                            "round(float(sum(leaf.sum() for leaf in leaves)), 4)"),
    "result-of-calling-it": ("model = Bias()\nout = model(jnp.ones((2, 4)))", "round(float(out.sum()), 4)"),
    "made-from-an-array": ("w = jnp.ones((4, 4)) * 1\nmodel = Wrapped(w)", "round(float(w.sum()), 4)"),
    "module-level-table": ("model = WithTable(nnx.Rngs(0))", "round(float(TABLE.sum()), 4)"),
}

DONATING = "@functools.partial(nnx.jit, donate_argnums=0)  # the step\n"


def _run(folder: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, name], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})


def _fix(folder: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "jaxmem-fix"), "--no-cache", name], cwd=folder,
                          capture_output=True, text=True, timeout=120)


def test_the_tutorials_model_optimizer_and_metrics_are_donated_and_it_trains_the_same(tmp_path):
    (tmp_path / "train.py").write_text(TUTORIAL)
    (tmp_path / "runner.py").write_text(RUNNER)
    original = _run(tmp_path, "runner.py")
    assert original.returncode == 0, original.stderr
    assert original.stdout.count("now deleted: False") == 3, original.stdout

    done = _fix(tmp_path, "train.py")
    assert done.returncode == 1, done.stdout + done.stderr
    fixed_source = (tmp_path / "train.py").read_text()
    assert "@partial(nnx.jit, donate_argnums=(0, 1, 2))\ndef train_step" in fixed_source, fixed_source
    # the eval step reads the model only: nnx.jit returns it (a copy per call), so it is donated too
    assert "@partial(nnx.jit, donate_argnums=(0, 1))\ndef eval_step" in fixed_source, fixed_source

    fixed = _run(tmp_path, "runner.py")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == original.stdout.replace("now deleted: False", "now deleted: True")


def test_a_model_whose_arrays_are_held_elsewhere_is_left_alone(tmp_path):
    forms = list(SHARED.items())
    steps = "".join(STEP.format(i=i, body=textwrap.indent(body, "    "), read=read)
                    for i, (_, (body, read)) in enumerate(forms))
    runs = "\n".join(f"run({name!r}, form_{i})" for i, (name, _) in enumerate(forms))
    source = HELD.format(steps=steps, runs=runs)
    program = tmp_path / "held.py"
    program.write_text(source)
    original = _run(tmp_path, "held.py")
    assert original.returncode == 0, original.stderr
    assert "crash" not in original.stdout, original.stdout

    program.write_text(source.replace("@nnx.jit  # the step\n", DONATING))
    forced = _run(tmp_path, "held.py")
    assert forced.returncode == 0, forced.stderr
    crashed = {line.split()[0] for line in forced.stdout.splitlines() if line.endswith("crash True")}
    assert crashed == set(SHARED), forced.stdout

    program.write_text(source)
    _fix(tmp_path, "held.py")
    fixed_source = program.read_text()
    assert "donate_argnums=0" not in fixed_source and "donate_argnums=(0" not in fixed_source, fixed_source
    fixed = _run(tmp_path, "held.py")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == original.stdout


def test_reading_metadata_or_comparing_keeps_no_array_and_the_model_is_still_donated(tmp_path):
    # a Variable's sharding and shape, ``is`` and ``==`` give bools or new arrays: nothing of them
    # holds the model's arrays, so the tutorial stays donated and trains the same
    checks = ("    assert model.lin.kernel.sharding is not None and model.lin.kernel[...].shape == (4, 4)\n"
              "    assert model.lin is not model.bn and model.bn.scale[...].dtype == jnp.float32\n")
    program = TUTORIAL.replace("    print(y.shape)\n", "    print(y.shape)\n" + checks)
    program = program.replace('    final = ', '    print(model.lin.kernel.sharding is not None, model.lin.kernel[...].sum() != 0)\n'
                              '    final = ')
    assert program.count("sharding") == 2
    (tmp_path / "train.py").write_text(program)
    (tmp_path / "runner.py").write_text(RUNNER)
    original = _run(tmp_path, "runner.py")
    assert original.returncode == 0, original.stderr
    assert "True True" in original.stdout and original.stdout.count("now deleted: False") == 3, original.stdout

    done = _fix(tmp_path, "train.py")
    assert done.returncode == 1, done.stdout + done.stderr
    fixed_source = (tmp_path / "train.py").read_text()
    assert "@partial(nnx.jit, donate_argnums=(0, 1, 2))\ndef train_step" in fixed_source, fixed_source
    fixed = _run(tmp_path, "runner.py")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == original.stdout.replace("now deleted: False", "now deleted: True")

"""An nnx training step fixed by jaxmem-fix --unsafe-fixes runs, and its model and optimizer are really donated.

nnx.jit writes Modules and Optimizers back after the call, so the call
site never rebinds them; jaxmem proposes the donation from the body's
in-place update: ``optimizer.update(model, grads)`` updates both (flax
0.12.8, the pair flax's own docs donate).  Checked here on real flax: the
old arrays of both are deleted, the losses are the same, and another
Module sharing the model's Variables (not passed to the step) sees the new
values, since nnx writes them back into the same Variables.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")

PROGRAM = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx


    class Model(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return self.lin(x)


    class Holder(nnx.Module):
        def __init__(self, lin):
            self.lin = lin


    @nnx.jit
    def train_step(model, optimizer, batch):
        grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
        optimizer.update(model, grads)
        return 0.0


    def main():
        model = Model(nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        holder = Holder(model.lin)  # shares the model's Variables, not passed to the step
        old_model = jax.tree_util.tree_leaves(nnx.state(model))
        before = jax.tree_util.tree_leaves(nnx.state(optimizer))
        for _ in range(3):
            train_step(model, optimizer, jnp.ones((2, 4)))
            print(float(model.lin.kernel[...].sum()))
        print("old optimizer leaves deleted:", all(leaf.is_deleted() for leaf in before))
        print("old model leaves deleted:", all(leaf.is_deleted() for leaf in old_model))
        print("holder sees the new values:", float(holder.lin.kernel[...].sum()) == float(model.lin.kernel[...].sum()))


    main()
    """
)


def _run(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})


def test_fixed_nnx_step_runs_and_donates_the_model_and_the_optimizer(tmp_path):
    program = tmp_path / "train.py"
    program.write_text(PROGRAM)
    original = _run(program)
    assert original.returncode == 0, original.stderr
    assert "old optimizer leaves deleted: False" in original.stdout
    assert "old model leaves deleted: False" in original.stdout
    fix = Path(sys.executable).parent / "jaxmem-fix"
    # Medium confidence (nnx objects may share Variables jaxmem cannot see): --unsafe-fixes applies it.
    assert subprocess.run([str(fix), "--check", str(program)], capture_output=True, timeout=120).returncode == 0
    done = subprocess.run([str(fix), "--unsafe-fixes", str(program)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "@partial(nnx.jit, donate_argnums=(0, 1))" in program.read_text()
    fixed = _run(program)
    assert fixed.returncode == 0, fixed.stderr
    assert "old optimizer leaves deleted: True" in fixed.stdout
    assert "old model leaves deleted: True" in fixed.stdout
    assert "holder sees the new values: True" in fixed.stdout
    # Same losses printed before and after: the model still trains the same.
    assert fixed.stdout.splitlines()[:3] == original.stdout.splitlines()[:3]

"""A jitted step called through a nested helper (brax's ``training_epoch_with_timing``):
the default ``jaxmem-fix`` donates the state when every call of the helper lets
go of it, and the program then runs with the old state deleted and the same
result; where a caller still holds the state, donating it crashes and the
default fix leaves it alone."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

STEP_MARK = "jax.jit(step)  # the step"
DONATING = "jax.jit(step, donate_argnums=0)  # the step"

HEAD = """
    import jax
    import jax.numpy as jnp


    def step(state, batch):
        return jax.tree_util.tree_map(lambda s: s * 0.5 + batch.mean(), state)
"""

BRAX_LIKE = HEAD + """

    def train(num_epochs):
        training_epoch = jax.jit(step)  # the step

        def training_epoch_with_timing(training_state, batch):
            training_state = training_epoch(training_state, batch)
            jax.block_until_ready(training_state)
            return training_state

        training_state = {"w": jnp.ones((64, 64)), "b": jnp.zeros((64,))}
        first = training_state
        for i in range(num_epochs):
            training_state = training_epoch_with_timing(training_state, jnp.full((2, 64), float(i)))
        print("first state deleted:", first["w"].is_deleted() and first["b"].is_deleted())
        return training_state


    result = train(3)
    print(float(result["w"].sum()), float(result["b"].sum()))
"""

CRASHES = {
    # The caller reads the state again after the helper returns.
    "read-after-the-helper": HEAD + """

    def train():
        epoch = jax.jit(step)  # the step

        def helper(state, batch):
            state = epoch(state, batch)
            return state

        state = {"w": jnp.ones((8, 8))}
        new = helper(state, jnp.ones((2, 8)))
        print(float(state["w"].sum()))
        return new


    print(float(train()["w"].sum()))
""",
    # The helper is returned: its later callers are not seen, and one keeps the state.
    "helper-returned": HEAD + """

    def make_runner():
        epoch = jax.jit(step)  # the step

        def run(state, batch):
            state = epoch(state, batch)
            return state

        state = {"w": jnp.ones((8, 8))}
        state = run(state, jnp.ones((2, 8)))
        return run, state


    run, state = make_runner()
    kept = state
    state = run(state, jnp.ones((2, 8)))
    print(float(kept["w"].sum()), float(state["w"].sum()))
""",
    # The parent's own parameter is passed: the parent's caller still holds it.
    "parent-parameter": HEAD + """

    def train(state):
        epoch = jax.jit(step)  # the step

        def helper(s, batch):
            s = epoch(s, batch)
            return s

        state = helper(state, jnp.ones((2, 8)))
        return state


    init = {"w": jnp.ones((8, 8))}
    out = train(init)
    print(float(init["w"].sum()), float(out["w"].sum()))
""",
}


def _run(program: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, program.name], cwd=program.parent, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})


def _fix(folder: Path) -> None:
    fix = Path(sys.executable).parent / "jaxmem-fix"
    done = subprocess.run([str(fix), "--no-cache", "."], cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stdout + done.stderr


def test_default_fix_donates_through_a_nested_helper(tmp_path):
    program = tmp_path / "train.py"
    program.write_text(textwrap.dedent(BRAX_LIKE))
    original = _run(program)
    assert original.returncode == 0, original.stderr
    assert "first state deleted: False" in original.stdout

    _fix(tmp_path)
    fixed_source = program.read_text()
    assert "jax.jit(step, donate_argnums=0)" in fixed_source
    fixed = _run(program)
    assert fixed.returncode == 0, fixed_source + fixed.stderr
    assert "first state deleted: True" in fixed.stdout
    assert fixed.stdout.splitlines()[-1] == original.stdout.splitlines()[-1]  # the same result


@pytest.mark.parametrize("name", list(CRASHES))
def test_default_fix_leaves_a_held_state_alone(name, tmp_path):
    program = tmp_path / "train.py"
    source = textwrap.dedent(CRASHES[name])
    program.write_text(source)
    original = _run(program)
    assert original.returncode == 0, original.stderr

    assert STEP_MARK in source
    program.write_text(source.replace(STEP_MARK, DONATING))
    forced = _run(program)
    assert forced.returncode != 0, "donating the state should crash this program"
    assert "has been deleted" in forced.stderr, forced.stderr

    program.write_text(source)
    _fix(tmp_path)
    assert program.read_text() == source
    fixed = _run(program)
    assert fixed.returncode == 0 and fixed.stdout == original.stdout

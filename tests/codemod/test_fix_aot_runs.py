"""A jit compiled ahead of time, ``jax.jit(f).lower(*args).compile()``, is a
jitted callable like ``jax.jit(f)``: the compiled function takes the same
arguments and donates what the jit donates, and lowering keeps no argument
(checked on jax 0.10.2: only shapes are traced).  So the default
``jaxmem-fix`` donates a state the loop rebinds (the program runs the same,
its old states deleted), a donated state read after the call is a JXM101
that really raises, and a jit with static arguments (which the compiled
function no longer takes) is left alone."""

import sys

import pytest
from fix_runs import fix, fix_and_rerun, load, run, tool

jax = pytest.importorskip("jax")

PROGRAM = """
import jax
import jax.numpy as jnp


def update(state, batch):
    return jax.tree.map(lambda w: w - 0.1 * batch.mean(), state)


def initial_state():
    return {"w": jnp.ones((64, 64)), "b": jnp.zeros(64)}


BATCH = jnp.ones((8, 64))
step = jax.jit(update).lower(initial_state(), BATCH).compile()


def main():
    state = initial_state()
    for _ in range(5):
        state = step(state, BATCH)
    print(round(float(state["w"].sum()), 3), round(float(state["b"].sum()), 3))


if __name__ == "__main__":
    main()
"""

READ_AFTER = PROGRAM.replace("jax.jit(update)", "jax.jit(update, donate_argnums=0)").replace(
    "    for _ in range(5):\n        state = step(state, BATCH)\n",
    "    new = step(state, BATCH)\n    print(float(state['w'].sum()))\n    state = new\n",
)

STATIC = PROGRAM.replace("def update(state, batch):", "def update(scale, state, batch):").replace(
    "0.1 * batch.mean()", "scale * batch.mean()").replace(
    "jax.jit(update).lower(initial_state(), BATCH)",
    "jax.jit(update, static_argnums=0).lower(0.1, initial_state(), BATCH)")


def test_default_fix_donates_to_the_compiled_jit_and_the_program_runs(tmp_path):
    path = fix_and_rerun(tmp_path, PROGRAM)
    assert "step = jax.jit(update, donate_argnums=0).lower(initial_state(), BATCH).compile()" in path.read_text()

    namespace = load(path)
    state = namespace["initial_state"]()
    namespace["step"](state, namespace["BATCH"])
    assert all(leaf.is_deleted() for leaf in jax.tree.leaves(state))
    assert not namespace["BATCH"].is_deleted()


def test_a_read_after_a_compiled_donation_is_jxm101_and_really_raises(tmp_path):
    crash = run(sys.executable, "-c", READ_AFTER, cwd=tmp_path)
    assert crash.returncode != 0 and "Array has been deleted" in crash.stderr, crash.stderr
    (tmp_path / "train.py").write_text(READ_AFTER)
    checked = run(tool("jaxmem"), "check", "train.py", cwd=tmp_path)
    assert "JXM101" in checked.stdout and "state" in checked.stdout, checked.stdout


def test_a_compiled_jit_with_static_arguments_is_left_alone(tmp_path):
    expected = run(sys.executable, "-c", STATIC, cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    path, result = fix(tmp_path, STATIC, "--unsafe-fixes")
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_text() == STATIC

"""A parameter rebound on every path before the call holds a value the function
made, not the caller's: ``x = jnp.asarray([x] * n)`` (gemma's sampler) or
``state = jax.tree.map(jnp.copy, state)`` before a training loop.  The default
``jaxmem-fix`` donates it, and the fixed program prints the same with its old
arrays deleted.  Rebound on one path only, the caller's arrays still reach the
call: left alone, and the donation, when forced, really crashes."""


import pytest
from fix_runs import crashes_when_forced, fix, fix_and_rerun, load

jax = pytest.importorskip("jax")

STACKED = """
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.pmap, axis_name="i")
def max_pmap(x):
    return jax.lax.pmax(x, "i")


def max_across_devices(x):
    x = jnp.asarray([x] * jax.local_device_count())
    x = max_pmap(x)
    return int(x[0])


if __name__ == "__main__":
    print(max_across_devices(3))
"""

COPIED = """
import jax
import jax.numpy as jnp


@jax.jit
def step(state):
    return jax.tree.map(lambda v: v * 0.5, state)


def train(state, n):
    state = jax.tree.map(jnp.copy, state)
    for _ in range(n):
        state = step(state)
    return state


def main():
    state = {"w": jnp.ones((4, 4))}
    out = train(state, 3)
    print(float(out["w"].sum()), float(state["w"].sum()))


if __name__ == "__main__":
    main()
"""

# The copy on one path only: with ``fresh=False`` the caller's arrays reach the step.
COPIED_SOMETIMES = COPIED.replace(
    "def train(state, n):\n    state = jax.tree.map(jnp.copy, state)\n",
    "def train(state, n, fresh=False):\n    if fresh:\n        state = jax.tree.map(jnp.copy, state)\n",
)


def test_a_list_stacked_by_asarray_is_donated_and_the_program_runs(tmp_path):
    path = fix_and_rerun(tmp_path, STACKED)
    assert "@functools.partial(jax.pmap, axis_name=\"i\", donate_argnums=0)" in path.read_text()

    x = jax.numpy.asarray([3] * jax.local_device_count())
    load(path)["max_pmap"](x)
    assert x.is_deleted()


def test_a_parameter_copied_before_the_loop_is_donated_and_the_program_runs(tmp_path):
    path = fix_and_rerun(tmp_path, COPIED)
    assert "@partial(jax.jit, donate_argnums=0)" in path.read_text()

    state = {"w": jax.numpy.ones((2, 2))}
    load(path)["step"](state)
    assert state["w"].is_deleted()


def test_a_parameter_copied_on_one_path_only_is_left_alone_and_crashes_when_forced(tmp_path):
    assert COPIED_SOMETIMES != COPIED
    path, result = fix(tmp_path, COPIED_SOMETIMES)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == COPIED_SOMETIMES

    crashes_when_forced(tmp_path, "import functools\n" + COPIED_SOMETIMES, "@jax.jit\ndef step",
                        "@functools.partial(jax.jit, donate_argnums=0)\ndef step")

"""A blackjax sampling loop, ``state, info = jax.jit(nuts.step)(key, state)``,
is fixed by the default ``jaxmem-fix``: a blackjax algorithm's ``init`` holds
the position as it is and makes the rest new, and its ``step`` returns a
state of the same structure, so the state is donated; the fixed program
prints the same and its old states are deleted.  When the position is read
after the loop, the state shares its arrays: left alone, and it crashes when
forced."""

import sys

import pytest
from fix_runs import fix, fix_and_rerun, load, run

jax = pytest.importorskip("jax")
pytest.importorskip("blackjax")

PROGRAM = """
import blackjax
import jax
import jax.numpy as jnp


def logdensity(x):
    return -0.5 * jnp.sum((x["w"] - 1.0) ** 2)


nuts = blackjax.nuts(logdensity, 0.5, jnp.ones(3))
step = jax.jit(nuts.step)


def main():
    state = nuts.init({"w": jnp.zeros(3)})
    key = jax.random.key(0)
    total = 0.0
    for _ in range(20):
        key, sample_key = jax.random.split(key)
        state, info = step(sample_key, state)
        total += float(info.acceptance_rate)
    print("mean", round(float(state.position["w"].mean()), 4), "acceptance", round(total / 20, 4))


if __name__ == "__main__":
    main()
"""

READS_POSITION = PROGRAM.replace(
    '    state = nuts.init({"w": jnp.zeros(3)})\n',
    '    position = {"w": jnp.zeros(3)}\n    state = nuts.init(position)\n',
).replace('round(total / 20, 4))', 'round(total / 20, 4), "start", float(position["w"].sum()))')


def test_default_fix_donates_the_sampler_state_and_the_program_runs(tmp_path):
    path = fix_and_rerun(tmp_path, PROGRAM, name="sample.py")
    assert "step = jax.jit(nuts.step, donate_argnums=1)" in path.read_text()

    namespace = load(path)
    jnp = jax.numpy
    position = {"w": jnp.zeros(3)}
    state = namespace["nuts"].init(position)
    namespace["step"](jax.random.key(1), state)
    assert all(leaf.is_deleted() for leaf in jax.tree.leaves(state))


def test_a_position_read_after_the_loop_is_left_alone_and_crashes_when_forced(tmp_path):
    assert run(sys.executable, "-c", READS_POSITION, cwd=tmp_path).returncode == 0
    path, result = fix(tmp_path, READS_POSITION, name="sample.py")
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == READS_POSITION

    forced = READS_POSITION.replace("jax.jit(nuts.step)", "jax.jit(nuts.step, donate_argnums=1)")
    crash = run(sys.executable, "-c", forced, cwd=tmp_path)
    assert crash.returncode != 0 and "deleted" in crash.stderr, crash.stderr


MODULE_LEVEL_INIT = """
import blackjax
import jax
import jax.numpy as jnp


def sample(center):
    def logdensity_fn(x):
        return -0.5 * jnp.sum((x - center) ** 2)

    state = blackjax.hmc.init(jnp.zeros(3), logdensity_fn)
    kernel = blackjax.hmc(logdensity_fn, step_size=0.1, inverse_mass_matrix=jnp.ones(3), num_integration_steps=5)
    step = jax.jit(kernel.step)
    for i in range(10):
        state, _ = step(jax.random.key(i), state)
    return state


print("mean", round(float(sample(jnp.ones(3)).position.mean()), 4))
"""


def test_the_module_level_init_holds_only_the_position_and_the_fixed_program_runs(tmp_path):
    path = fix_and_rerun(tmp_path, MODULE_LEVEL_INIT, name="sample.py")
    assert "step = jax.jit(kernel.step, donate_argnums=1)" in path.read_text()

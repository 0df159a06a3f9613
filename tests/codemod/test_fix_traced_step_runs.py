"""A jitted step that the program also hands to a function that only traces it
(``jax.make_jaxpr(step)``, ``jax.eval_shape(step, ...)``,
``hk.experimental.tabulate(step)``, the form of dm-haiku's ImageNet example)
is still called only where jaxmem sees it: tracing runs nothing on real arrays
(checked on jax 0.10.2 and, for tabulate, dm-haiku 0.0.17: no leaf deleted).
The default ``jaxmem-fix`` donates the state, and the fixed program prints the
same with its old arrays deleted.  A function of the user's own that happens to
be called ``tabulate`` may run and keep the step: left alone, and the donation,
when forced, really crashes."""


import pytest
from fix_runs import crashes_when_forced, fix, fix_and_rerun, load

jax = pytest.importorskip("jax")

TRACED = """
import jax
import jax.numpy as jnp


@jax.jit
def train_step(state, batch):
    return jax.tree.map(lambda v: v - 0.1 * batch.mean(), state)


def main():
    state = {"w": jnp.ones((4, 4)), "b": jnp.zeros(4)}
    batch = jnp.ones(4)
    print(len(jax.make_jaxpr(train_step)(state, batch).eqns))
    print(jax.eval_shape(train_step, state, batch)["w"].shape)
    for _ in range(3):
        state = train_step(state, batch)
    print(float(state["w"].sum()))


if __name__ == "__main__":
    main()
"""

# ``tabulate`` here is the program's own: it runs the step at once and keeps it.
OWN_TABULATE = TRACED.replace(
    "def main():\n",
    "STEPS = []\n\n\ndef tabulate(fn):\n    STEPS.append(fn)\n    return fn\n\n\ndef main():\n",
).replace(
    "    print(jax.eval_shape(train_step, state, batch)[\"w\"].shape)\n",
    "    print(tabulate(train_step)(state, batch)[\"w\"].shape)\n"
    "    print(float(STEPS[0](state, batch)[\"w\"].sum()))\n",
)


def test_a_step_also_traced_by_make_jaxpr_and_eval_shape_is_donated_and_the_program_runs(tmp_path):
    path = fix_and_rerun(tmp_path, TRACED)
    assert "@partial(jax.jit, donate_argnums=0)" in path.read_text()

    state = {"w": jax.numpy.ones((2, 2))}
    load(path)["train_step"](state, jax.numpy.ones(2))
    assert state["w"].is_deleted()


def test_a_step_handed_to_a_tabulate_of_the_programs_own_is_left_alone_and_crashes_when_forced(tmp_path):
    assert OWN_TABULATE != TRACED and "STEPS[0](state, batch)" in OWN_TABULATE
    path, result = fix(tmp_path, OWN_TABULATE)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == OWN_TABULATE

    crashes_when_forced(tmp_path, "import functools\n" + OWN_TABULATE, "@jax.jit\ndef train_step",
                        "@functools.partial(jax.jit, donate_argnums=0)\ndef train_step")

"""One jit node bound to several names (a factory called twice, ``f = make(); g = make()``):
one edit donates for every name, so a parameter is proposed only when the calls
through all of them allow it.  Each program really runs, before and after the fix."""

import sys
import textwrap

import pytest

from fix_runs import fix, fix_and_rerun, run, tool

pytest.importorskip("jax")

FACTORY = """
    import jax
    import jax.numpy as jnp


    def make():
        def step(state, x):
            return state + x
        return jax.jit(step)


    train = make()
    evaluate = make()


    def main():
        state = jnp.ones(3)
        for _ in range(3):
            state = train(state, 1.0)
        other = jnp.ones(3)
        {second}
        print(float(state.sum()), float(other.sum()), float(result.sum()))


    main()
"""

READ_AFTER = "result = evaluate(other, 1.0)"
REBOUND = "other = evaluate(other, 1.0); result = other"


def _program(second: str) -> str:
    return textwrap.dedent(FACTORY).replace("{second}", second)


def test_a_read_after_a_call_through_the_other_name_keeps_the_shared_jit_undonated(tmp_path):
    program = _program(READ_AFTER)
    before = run(sys.executable, "-c", program, cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    forced = run(sys.executable, "-c", program.replace("jax.jit(step)", "jax.jit(step, donate_argnums=0)"), cwd=tmp_path)
    assert forced.returncode != 0 and "has been deleted" in forced.stderr  # the pattern is real: donating crashes it

    path, result = fix(tmp_path, program)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == program
    shown = run(tool("jaxmem"), "check", "--no-cache", "--show-skipped", "train.py", cwd=tmp_path)
    assert "call sites disagree" in shown.stdout + shown.stderr


def test_every_name_rebinding_its_state_gets_the_donation_and_runs(tmp_path):
    path = fix_and_rerun(tmp_path, _program(REBOUND))
    assert "jax.jit(step, donate_argnums=0)" in path.read_text()

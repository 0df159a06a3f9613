"""The donation tracker names the donating call in 'Array has been deleted' errors."""

import jax
import jax.numpy as jnp
import pytest

from jaxmem.runtime_check import DonatedArrayUsedError, track_donations


def test_context_manager_names_variable_call_line_and_parameter():
    with pytest.raises(DonatedArrayUsedError) as caught:
        with track_donations():
            step = jax.jit(lambda state, batch: state + batch, donate_argnums=0)
            state = jnp.ones(3)
            step(state, 1.0); donating_line = __import__("sys")._getframe().f_lineno  # noqa: E702
            state + 1  # noqa: JXM101 - the read the tracker must explain
    message = str(caught.value)
    assert "deleted" in message
    assert f"test_tracker.py:{donating_line} in a call to" in message
    assert "`state`" in message and "parameter `state` (float32[3])" in message


def test_functions_jitted_before_the_block_are_tracked_through_watch():
    step = jax.jit(lambda state: state * 2, donate_argnums=0)
    with pytest.raises(DonatedArrayUsedError, match="parameter `state`"):
        with track_donations() as tracker:
            watched = tracker.watch(step)
            tree = {"a": jnp.ones(2)}
            watched(tree["a"])
            jnp.sum(tree["a"])


def test_other_errors_pass_through_unchanged():
    with pytest.raises(ZeroDivisionError):
        with track_donations():
            1 / 0


def test_jaxmem_run_names_the_donating_line(write_file, run_commands):
    write_file("train.py", """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def unrelated(x):
            return x

        def train_step(state, batch):
            return state - batch

        step = jax.jit(train_step, donate_argnums=0)

        def main():
            state = jnp.ones((2, 2))
            new_state = step(state, jnp.ones((2, 2)))
            print(float(state.sum()))

        main()
    """)
    done = run_commands("run", "--", "python", "train.py")
    assert done.returncode == 1
    assert "Array has been deleted" in done.stderr
    assert "train.py:16 in a call to train_step(...) (defined at" in done.stderr
    assert "train.py:12)" in done.stderr
    assert "`state` (read at" in done.stderr and "parameter `state` (float32[2,2])" in done.stderr

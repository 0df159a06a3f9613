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


def test_a_jit_inside_a_jit_and_optax_steps_run_unchanged():
    optax = pytest.importorskip("optax")
    with track_donations():
        inner = jax.jit(lambda x: x * 2, donate_argnums=0)
        outer = jax.jit(lambda x: inner(x) + 1, donate_argnums=0)
        assert float(outer(jnp.ones(3)).sum()) == 9.0
        optimizer = optax.adamw(1e-3)
        params = {"w": jnp.ones((4, 4))}
        opt_state = optimizer.init(params)

        @jax.jit
        def step(params, opt_state):
            grads = jax.grad(lambda p: (p["w"] ** 2).sum())(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        update = jax.jit(step, donate_argnums=(0, 1))
        for _ in range(2):
            params, opt_state = update(params, opt_state)
    assert params["w"].shape == (4, 4)


def test_jaxmem_run_names_a_module_level_variable(write_file, run_commands):
    write_file("script.py", """
        import jax
        import jax.numpy as jnp

        step = jax.jit(lambda state: state * 2, donate_argnums=0)
        state = jnp.ones(4)
        new_state = step(state)
        total = state.sum()
    """)
    done = run_commands("run", "--", "python", "script.py")
    assert done.returncode == 1, done.stderr
    assert "`state` (read at" in done.stderr and "script.py:8)" in done.stderr
    assert "script.py:7 in a call to <lambda>(...)" in done.stderr
    assert "run_globals" not in done.stderr


def test_jaxmem_run_runs_an_optax_training_loop(write_file, run_commands):
    pytest.importorskip("optax")
    write_file("train.py", """
        import jax
        import jax.numpy as jnp
        import optax

        optimizer = optax.adam(1e-3)

        def train_step(params, opt_state):
            grads = jax.grad(lambda p: (p ** 2).sum())(params)
            updates, opt_state = optimizer.update(grads, opt_state)
            return optax.apply_updates(params, updates), opt_state

        step = jax.jit(train_step, donate_argnums=(0, 1))
        params = jnp.ones((8, 8))
        opt_state = optimizer.init(params)
        for _ in range(3):
            params, opt_state = step(params, opt_state)
        print("loss", float((params ** 2).sum()))
        import sys
        print("flax imported:", "flax" in sys.modules)  # patched on import only, never imported for us
    """)
    done = run_commands("run", "--", "python", "train.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("loss ") and "flax imported: False" in done.stdout


def test_nnx_and_equinox_donations_are_named():
    nnx = pytest.importorskip("flax.nnx")
    eqx = pytest.importorskip("equinox")
    with pytest.raises(DonatedArrayUsedError, match=r"`kernel` \(read at .*parameter `m.kernel.value`"):
        with track_donations():
            model = nnx.Linear(4, 3, rngs=nnx.Rngs(0))
            step = nnx.jit(lambda m, x: m(x).sum(), donate_argnums=0)
            kernel = model.kernel[...]
            step(model, jnp.ones((2, 4)))
            kernel.sum()  # noqa: JXM101 - the read the tracker must explain
    with pytest.raises(DonatedArrayUsedError, match=r"`weight` \(read at .*parameter `m.weight`"):
        with track_donations():
            linear = eqx.nn.Linear(4, 3, key=jax.random.PRNGKey(0))
            double = eqx.filter_jit(lambda m: jax.tree.map(lambda p: p * 2, m), donate="all")
            weight = linear.weight
            double(linear)
            weight.sum()


def test_buffer_deleted_from_a_compiled_op_and_a_repeated_call_is_explained():
    """jax raises ValueError "Buffer has been deleted or donated" from compiled code: explained too."""
    double = jax.jit(lambda x: x * 2)
    with pytest.raises(DonatedArrayUsedError, match="Buffer has been deleted or donated") as caught:
        with track_donations():
            step = jax.jit(lambda state, batch: state + batch, donate_argnums=0)
            state = jnp.ones(3)
            double(state)  # compiled before the donation: the later read takes the C++ path
            step(state, 1.0)
            double(state)  # noqa: JXM101 - the read the tracker must explain
    assert "parameter `state` (float32[3])" in str(caught.value)
    with pytest.raises(DonatedArrayUsedError, match="parameter `state`") as caught:
        with track_donations():
            step = jax.jit(lambda state, batch: state + batch, donate_argnums=0)
            state = jnp.ones(3)
            for _ in range(2):  # the loop JXM105 warns about: the second call reads a deleted array
                step(state, 1.0)  # noqa: JXM105
    assert isinstance(caught.value.__cause__, ValueError)

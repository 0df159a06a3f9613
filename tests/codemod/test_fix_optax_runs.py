"""The functional optax loop every tutorial writes is fixed by the default
``jaxmem-fix``: ``tx.init(params)`` of a standard transform keeps nothing of
``params``, so both ``params`` and ``opt_state`` are donated, and the fixed
program runs with the same result and its old inputs deleted."""

import os
import subprocess
import sys
import textwrap

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("optax")

PROGRAM = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp
    import optax


    def loss_fn(params, batch):
        return ((batch @ params["w"] + params["b"]) ** 2).mean()


    @jax.jit
    def train_step(params, opt_state, batch):
        grads = jax.grad(loss_fn)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state


    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))


    def main():
        params = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
        opt_state = tx.init(params)
        for i in range(5):
            params, opt_state = train_step(params, opt_state, jnp.full((8, 4), float(i)))
        return float(loss_fn(params, jnp.ones((8, 4))))


    if __name__ == "__main__":
        print(main())
    """
)


def _jaxmem_fix(*args, cwd):
    script = os.path.join(os.path.dirname(sys.executable), "jaxmem-fix")
    return subprocess.run([script, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _load(path):
    namespace = {"__name__": "train"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_default_fix_donates_params_and_opt_state(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "train.py"
    path.write_text(PROGRAM)
    expected = _load(path)["main"]()

    result = _jaxmem_fix("train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # changed
    assert "donate_argnums=(0, 1)" in path.read_text()

    fixed = _load(path)
    assert fixed["main"]() == expected
    params = {"w": jax.numpy.ones((4, 4)), "b": jax.numpy.zeros((4,))}
    opt_state = fixed["tx"].init(params)
    fixed["train_step"](params, opt_state, jax.numpy.ones((8, 4)))
    assert params["w"].is_deleted() and params["b"].is_deleted()
    assert all(leaf.is_deleted() for leaf in jax.tree_util.tree_leaves(opt_state) if leaf.size > 1)

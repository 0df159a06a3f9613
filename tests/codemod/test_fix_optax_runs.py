"""The functional optax loop every tutorial writes is fixed by the default
``jaxmem-fix``: ``tx.init(params)`` of a standard transform keeps nothing of
``params``, so both ``params`` and ``opt_state`` are donated, and the fixed
program runs with the same result and its old inputs deleted."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("optax")

PROGRAM = Path(__file__).resolve().parents[1] / "runtime_check" / "confirm_programs" / "optax_train.py"


def _run(*command, cwd):
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def _load(path):
    namespace = {"__name__": "train"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_default_fix_donates_params_and_opt_state(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "train.py"
    shutil.copy(PROGRAM, path)
    expected = _run(sys.executable, "train.py", cwd=tmp_path)
    assert expected.returncode == 0 and expected.stdout.startswith("loss"), expected.stderr

    fixer = os.path.join(os.path.dirname(sys.executable), "jaxmem-fix")
    result = _run(fixer, "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # changed
    assert "donate_argnums=(0, 1)" in path.read_text()

    rerun = _run(sys.executable, "train.py", cwd=tmp_path)
    assert (rerun.returncode, rerun.stdout) == (0, expected.stdout), rerun.stderr
    fixed = _load(path)
    params = {"w": jax.numpy.ones((4, 4)), "b": jax.numpy.zeros((4,))}
    opt_state = fixed["tx"].init(params)
    fixed["train_step"](params, opt_state, jax.numpy.ones((8, 4)))
    assert params["w"].is_deleted() and params["b"].is_deleted()
    assert all(leaf.is_deleted() for leaf in jax.tree_util.tree_leaves(opt_state) if leaf.size > 1)


# The older optax spelling: the transform unpacked into its two functions,
# ``opt_update`` called inside the jitted step (jraph's and many tutorials' examples).
UNPACKED = """
import jax
import jax.numpy as jnp
import optax

opt_init, opt_update = optax.adam(1e-3)


@jax.jit
def update(params, opt_state, batch):
    grads = jax.grad(lambda p: ((batch @ p["w"] + p["b"]) ** 2).mean())(params)
    updates, opt_state = opt_update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state


def main():
    params = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
    opt_state = opt_init(params)
    for i in range(5):
        params, opt_state = update(params, opt_state, jnp.full((8, 4), float(i)))
    print("w", float(params["w"].sum()))


if __name__ == "__main__":
    main()
"""

# The transform's own update jitted on its own: its state is rebound from the result.
JITTED_UPDATE = """
import jax
import jax.numpy as jnp
import optax

tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
update_fn = jax.jit(tx.update)


def main():
    params = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
    state = tx.init(params)
    for i in range(5):
        grads = jax.tree_util.tree_map(lambda p: p * 0.5 + i, params)
        updates, state = update_fn(grads, state, params)
        params = optax.apply_updates(params, updates)
    print("w", float(params["w"].sum()))


if __name__ == "__main__":
    main()
"""


def _fix_and_rerun(tmp_path, program):
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "train.py"
    path.write_text(program)
    expected = _run(sys.executable, "train.py", cwd=tmp_path)
    assert expected.returncode == 0 and expected.stdout.startswith("w"), expected.stderr
    fixer = os.path.join(os.path.dirname(sys.executable), "jaxmem-fix")
    result = _run(fixer, "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr  # changed
    rerun = _run(sys.executable, "train.py", cwd=tmp_path)
    assert (rerun.returncode, rerun.stdout) == (0, expected.stdout), rerun.stderr
    return path


def _opt_leaves(state):
    return [leaf for leaf in jax.tree_util.tree_leaves(state) if leaf.size > 1]


def test_default_fix_donates_through_unpacked_optax_functions(tmp_path):
    # opt_init(params) makes new buffers (so opt_state shares none with params) and
    # opt_update returns a state of opt_state's structure (so donating it is useful).
    path = _fix_and_rerun(tmp_path, UNPACKED)
    assert "@partial(jax.jit, donate_argnums=(0, 1))" in path.read_text()
    fixed = _load(path)
    params = {"w": jax.numpy.ones((4, 4)), "b": jax.numpy.zeros((4,))}
    opt_state = fixed["opt_init"](params)
    fixed["update"](params, opt_state, jax.numpy.ones((8, 4)))
    assert params["w"].is_deleted() and params["b"].is_deleted()
    assert all(leaf.is_deleted() for leaf in _opt_leaves(opt_state))


def test_default_fix_donates_the_state_of_a_jitted_transform_update(tmp_path):
    # The state is dead after each call and the update's new state has its structure;
    # the gradients are not rebound from the result (JXM002, low confidence: not fixed).
    path = _fix_and_rerun(tmp_path, JITTED_UPDATE)
    assert "jax.jit(tx.update, donate_argnums=1)" in path.read_text()
    fixed = _load(path)
    params = {"w": jax.numpy.ones((4, 4)), "b": jax.numpy.zeros((4,))}
    grads = jax.tree_util.tree_map(lambda p: p + 1.0, params)
    state = fixed["tx"].init(params)
    fixed["update_fn"](grads, state, params)
    assert not grads["w"].is_deleted() and not params["w"].is_deleted()
    assert _opt_leaves(state) and all(leaf.is_deleted() for leaf in _opt_leaves(state))

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

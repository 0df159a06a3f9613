"""The hooks in .pre-commit-hooks.yaml through the real ``pre-commit try-repo``.

pre-commit installs this checkout (HEAD plus tracked changes) into its own
virtualenv, with libcst and pyyaml from PyPI, so this test is slow and needs
PyPI; it is skipped when git or pre-commit is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from training_programs import TRAIN

CHECKOUT = Path(__file__).resolve().parents[2]



def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fix_hook_fixes_then_passes(tmp_path):
    pytest.importorskip("pre_commit")
    if not (CHECKOUT / ".git").exists():
        pytest.skip("needs a git checkout of jaxmem")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    _git("config", "user.email", "dev@example.com", cwd=repo)
    _git("config", "user.name", "dev", cwd=repo)
    (repo / "train.py").write_text(TRAIN)
    _git("add", "train.py", cwd=repo)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), JAX_PLATFORMS="cpu")
    env.pop("VIRTUAL_ENV", None)

    def hooks():
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "try-repo", str(CHECKOUT), "--all-files", "--color", "never"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=900,
        )

    first = hooks()
    assert first.returncode == 1, first.stdout + first.stderr
    assert "jaxmem check" in first.stdout and "JXM001" in first.stdout
    assert "files were modified by this hook" in first.stdout
    fixed = (repo / "train.py").read_text()
    assert "@partial(jax.jit, donate_argnums=0)\n" in fixed
    assert "from functools import partial\n" in fixed

    _git("add", "train.py", cwd=repo)
    second = hooks()
    assert second.returncode == 0, second.stdout + second.stderr
    assert (repo / "train.py").read_text() == fixed

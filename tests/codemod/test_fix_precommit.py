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


README = CHECKOUT / "README.md"
NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["import jax\n", "import jax.numpy as jnp"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["@jax.jit\n", "def step(state, batch):\n", "    return state + batch\n"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["state = jnp.zeros(3)\n", "for i in range(3):\n", "    state = step(state, jnp.ones(3))"]},
    ],
    "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def readme_snippets() -> list[str]:
    """The ```yaml blocks of the README's pre-commit section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### pre-commit"):]
    section = section[:section.index("\n### ", 1)]
    return [block.split("```", 1)[0] for block in section.split("```yaml\n")[1:]]


def fresh_repository(tmp_path):
    """A new git repository with a Python file and a notebook staged, as a user has it."""
    import json

    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    _git("config", "user.email", "dev@example.com", cwd=repo)
    _git("config", "user.name", "dev", cwd=repo)
    (repo / "train.py").write_text(TRAIN)
    (repo / "train.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    _git("add", "train.py", "train.ipynb", cwd=repo)
    return repo


def published_clone(tmp_path) -> tuple[Path, str]:
    """A clone of this checkout whose HEAD commit holds the working tree (as a user's
    "host" of jaxmem would), and that commit's full hash."""
    clone = tmp_path / "jaxmem-host"
    subprocess.run(["git", "clone", "-q", str(CHECKOUT), str(clone)], check=True, capture_output=True)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=CHECKOUT, check=True, capture_output=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        source = CHECKOUT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, clone / name)
    _git("add", "-A", cwd=clone)
    subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", "commit", "-q",
                    "--allow-empty", "-m", "working tree"], cwd=clone, check=True, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, check=True, capture_output=True, text=True)
    return clone, head.stdout.strip()


def run_hooks(repo, tmp_path, path_extra=()):
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), JAX_PLATFORMS="cpu")
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join([*map(str, path_extra), env.get("PATH", "")])
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def assert_fixed_then_clean(repo, tmp_path, path_extra=()):
    first = run_hooks(repo, tmp_path, path_extra)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    assert "@partial(jax.jit, donate_argnums=0)\n" in (repo / "train.py").read_text()
    assert "@partial(jax.jit, donate_argnums=0)\\n" in (repo / "train.ipynb").read_text()
    _git("add", "train.py", "train.ipynb", cwd=repo)
    second = run_hooks(repo, tmp_path, path_extra)
    assert second.returncode == 0, second.stdout + second.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_readme_snippet_with_a_commit_hash_works_in_a_fresh_repository(tmp_path):
    pytest.importorskip("pre_commit")
    if not (CHECKOUT / ".git").exists():
        pytest.skip("needs a git checkout of jaxmem")
    [remote, _local] = readme_snippets()
    clone, commit = published_clone(tmp_path)
    repo = fresh_repository(tmp_path)
    config = remote.replace("https://github.com/your-org/jaxmem", str(clone))
    config = config.replace("0123456789abcdef0123456789abcdef01234567", commit)
    assert str(clone) in config and commit in config
    (repo / ".pre-commit-config.yaml").write_text(config)
    assert_fixed_then_clean(repo, tmp_path)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_readme_local_snippet_works_with_jaxmem_installed(tmp_path):
    pytest.importorskip("pre_commit")
    [_remote, local] = readme_snippets()
    repo = fresh_repository(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text(local)
    assert_fixed_then_clean(repo, tmp_path, path_extra=[Path(sys.executable).parent])

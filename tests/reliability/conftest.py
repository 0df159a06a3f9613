"""Helpers for the reliability tests: real runs of the installed CLIs on hostile input."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

from cli.conftest import MISSED_DONATION, MISSED_DONATION_LINE, run_tool, write  # noqa: E402
from training_programs import TRAIN  # noqa: E402

__all__ = ["MISSED_DONATION", "MISSED_DONATION_LINE", "TRAIN", "write"]

# What jaxmem-fix makes of TRAIN (a bare @jax.jit whose first argument is dead).
TRAIN_FIXED = TRAIN.replace(
    "import jax\n", "from functools import partial\n\nimport jax\n", 1
).replace("@jax.jit\n", "@partial(jax.jit, donate_argnums=0)\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder; its own pyproject.toml stops the config search."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    return tmp_path


@pytest.fixture
def jaxmem(project):
    """``jaxmem(*args)`` runs the installed ``jaxmem`` in ``project``."""
    def run(*args, input=None, env=None, cwd=None):
        return run_tool("jaxmem", *args, cwd=cwd or project, input=input, env=env)
    return run


@pytest.fixture
def jaxmem_fix(project):
    """``jaxmem_fix(*args)`` runs the installed ``jaxmem-fix`` in ``project``."""
    def run(*args, input=None, env=None, cwd=None):
        return run_tool("jaxmem-fix", *args, cwd=cwd or project, input=input, env=env)
    return run

"""Helpers for the ``jaxmem check`` tests: real subprocess runs of the installed CLIs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from training_programs import MISSED_DONATION  # noqa: F401  (re-exported to the CLI tests)

BIN = Path(sys.executable).parent

MISSED_DONATION_LINE = 4

# x is donated, then read: JXM101 at the print(x) read (line 9).
READ_AFTER_DONATION = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    def g(x):
        return x * 2

    f = jax.jit(g, donate_argnums=0)
    x = jnp.ones(3)
    y = f(x); print(x)
    """)
READ_AFTER_DONATION_LINE = 9

CLEAN = textwrap.dedent("""\
    import jax.numpy as jnp

    def norm(x):
        return jnp.sqrt((x * x).sum())
    """)


def run_tool(name: str, *args, cwd, input: bytes | str | None = None, env=None):
    """Run an installed console script; returns the CompletedProcess (text)."""
    environment = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
    environment["NO_COLOR"] = "1"
    environment.update(env or {})
    if isinstance(input, bytes):
        completed = subprocess.run(
            [str(BIN / name), *map(str, args)], cwd=cwd, input=input,
            capture_output=True, env=environment, timeout=600,
        )
        completed.stdout = completed.stdout.decode("utf-8", "replace")
        completed.stderr = completed.stderr.decode("utf-8", "replace")
        return completed
    return subprocess.run(
        [str(BIN / name), *map(str, args)], cwd=cwd, input=input, text=True,
        capture_output=True, env=environment, timeout=600,
    )


@pytest.fixture
def jaxmem(tmp_path):
    """``jaxmem(*args, input=None, env=None)`` runs ``.venv/bin/jaxmem`` in ``tmp_path``."""
    def run(*args, input=None, env=None, cwd=None):
        return run_tool("jaxmem", *args, cwd=cwd or tmp_path, input=input, env=env)
    return run


@pytest.fixture
def flake8(tmp_path):
    """``flake8(*args)`` runs ``.venv/bin/flake8`` in ``tmp_path`` with jaxmem's codes."""
    def run(*args, input=None):
        return run_tool("flake8", "--select", "JXM", *args, cwd=tmp_path, input=input)
    return run


def write(folder: Path, relative: str, content: str | bytes) -> Path:
    """Create ``folder/relative`` (and its folders) holding ``content``."""
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path

"""Fixtures for the runtime verifier tests: user code on disk and the jaxmem commands."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.fixture
def write_file(tmp_path):
    """Write dedented ``text`` to ``tmp_path / name`` and return the path."""
    def write(name: str, text: str):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path
    return write


@pytest.fixture
def run_commands(tmp_path):
    """Run ``python -m jaxmem.runtime_check.commands ARGS`` in ``tmp_path`` (a fresh process)."""
    def run(*args: str, cwd=None):
        return subprocess.run([sys.executable, "-m", "jaxmem.runtime_check.commands", *args],
                              cwd=cwd or tmp_path, capture_output=True, text=True, timeout=120)
    return run


@pytest.fixture
def no_debug_nans():
    """Restore ``jax_debug_nans`` after a test that turns it on."""
    import jax

    saved = jax.config.jax_debug_nans
    yield
    jax.config.update("jax_debug_nans", saved)

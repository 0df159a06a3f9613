"""The libcst codemod command: in-process (CodemodTest) and through ``python -m libcst.tool``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from libcst.codemod import CodemodTest

from jaxmem.codemod.command import AddDonationsCommand

BEFORE = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp


    def update(state, grad):
        return state - 0.1 * grad


    step = jax.jit(update)


    def train(steps):
        state = jnp.ones((4,))
        for _ in range(steps):
            grad = jnp.ones((4,))
            state = step(state, grad)
        return state
    """
)
AFTER = BEFORE.replace("jax.jit(update)", "jax.jit(update, donate_argnums=0)")


class TestAddDonationsCommand(CodemodTest):
    TRANSFORM = AddDonationsCommand

    def test_adds_the_donation(self) -> None:
        self.assertCodemod(BEFORE, AFTER)

    def test_argnames_style(self) -> None:
        self.assertCodemod(
            BEFORE, BEFORE.replace("jax.jit(update)", 'jax.jit(update, donate_argnames="state")'), style="argnames"
        )

    def test_file_without_missed_donation_is_skipped(self) -> None:
        self.assertCodemod(AFTER, AFTER, expected_skip=True)

    def test_caller_owned_value_needs_unsafe_fixes(self) -> None:
        before = textwrap.dedent(
            """
            import jax


            def update(state, grad):
                return state - 0.1 * grad


            step = jax.jit(update)


            def train(state, grads):
                for grad in grads:
                    state = step(state, grad)
                return state
            """
        )
        self.assertCodemod(before, before, expected_skip=True)
        after = before.replace("jax.jit(update)", "jax.jit(update, donate_argnums=0)")
        self.assertCodemod(before, after, unsafe_fixes=True)


def test_libcst_tool_runs_the_command(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (tmp_path / "train.py").write_text(BEFORE)
    result = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "-x", "--no-format",
         "jaxmem.codemod.command.AddDonationsCommand", "train.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    assert result.returncode == 0, result.stderr
    assert "Transformed 1 files successfully" in result.stderr
    assert (tmp_path / "train.py").read_text() == AFTER

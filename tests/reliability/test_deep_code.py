"""Item 5: deep but valid code is analysed, and errors are not masked by a KeyError."""

from __future__ import annotations

import libcst as cst
import pytest

from jaxmem.lint.syntax.positions import Positions

from .conftest import write

STEP = "import jax\n\n@jax.jit\ndef step(s, b):\n    return s + b\n\n"


def _elif_chain(branches: int) -> str:
    lines = ["def loop(s, x):", "    if x == 0:", "        s = step(s, 0)"]
    for number in range(1, branches):
        lines += [f"    elif x == {number}:", f"        s = step(s, {number})"]
    return STEP + "\n".join(lines) + "\n    return s\n"


def _operator_chain(operands: int) -> str:
    chain = " + ".join(["b"] * operands)
    return STEP + f"def train(s, b):\n    s = step(s, {chain})\n    return s\n"


def test_five_hundred_elif_branches_are_analysed(project, jaxmem):
    write(project, "elifs.py", _elif_chain(500))
    result = jaxmem("check", "--no-cache", "elifs.py")
    assert "internal error" not in result.stdout + result.stderr
    assert "elifs.py:3:1: JXM001 `step` does not donate `s`" in result.stdout
    assert result.returncode == 1


def test_a_long_operator_chain_is_analysed(project, jaxmem):
    write(project, "chain.py", _operator_chain(1500))
    result = jaxmem("check", "--no-cache", "chain.py")
    assert "internal error" not in result.stdout + result.stderr
    assert "chain.py:3:1: JXM001 `step` does not donate `s`" in result.stdout


def test_jaxmem_fix_edits_a_deep_file(project, jaxmem_fix):
    write(project, "elifs.py", _elif_chain(500))
    result = jaxmem_fix("--no-cache", "--unsafe-fixes", "elifs.py")
    assert result.returncode == 1, result.stderr
    text = (project / "elifs.py").read_text()
    assert "@partial(jax.jit, donate_argnums=0)" in text
    assert text.count("elif x ==") == 499


def test_an_error_inside_position_codegen_is_not_replaced_by_a_key_error(monkeypatch):
    # Interrupting codegen in a method's decorator (as Ctrl-C or a RecursionError
    # does) must surface that error, not a KeyError for the class body's first
    # statement, whose span was never recorded.
    module = cst.parse_module("class C:\n    @a\n    def f(self):\n        pass\n")

    class Interrupted(Exception):
        pass

    real = cst.Name._codegen_impl

    def interrupted_on_a(self, state, *args, **kwargs):
        if self.value == "a":
            raise Interrupted
        return real(self, state, *args, **kwargs)

    monkeypatch.setattr(cst.Name, "_codegen_impl", interrupted_on_a)
    with pytest.raises(Interrupted):
        Positions(module)[module.body[0]]


def test_code_too_deep_even_for_the_large_stack_is_a_jxm900_naming_the_cause(project, jaxmem):
    nested = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    write(project, "nested.py", STEP + nested + "def train(s, b):\n    s = step(s, b)\n    return s\n")
    result = jaxmem("check", "--no-cache", "nested.py")
    assert "Traceback" not in result.stderr
    assert "nested.py:" in result.stdout and "JXM900" in result.stdout
    assert "internal error" not in result.stdout

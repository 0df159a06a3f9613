"""One ``jaxmem-fix`` run reaches the fixed point: a second run on its own output changes nothing.

A pre-commit hook that edits on every run never lets a commit through, so
each program here is fixed twice through the real command line (default
and ``--unsafe-fixes``) and the second run must leave every byte alone.
The programs: every rule example, every fix case (before and after), the
liveness case files, the bundled example and the forms that once failed
(a callable with no visible signature donated by position).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fix_cases import FIX_CASES, code, source_of
from training_programs import TRAIN

from jaxmem.codemod.cli import main as fix_main
from jaxmem.lint.rules import RULES

REPO = Path(__file__).resolve().parents[2]

# A wrapped function jaxmem cannot see: positions are donated without names.
NO_SIGNATURE = code(
    """
    import jax
    import jax.numpy as jnp
    from lib import train_step


    step = jax.jit(train_step)


    def main():
        state = jnp.zeros(3)
        x = jnp.ones(3)
        for _ in range(3):
            state, x = step(state, x)
        return state
    """
)

NO_SIGNATURE_PMAP = code(
    """
    import jax
    import jax.numpy as jnp


    def make_step(lr):
        def step(params, opt, batch):
            return params - lr * batch, opt + 1, batch
        return step


    p_step = jax.pmap(make_step(0.1), axis_name="batch")


    def main(batches):
        params = jnp.zeros((1, 3))
        opt = jnp.zeros((1, 3))
        for batch in batches:
            params, opt, _ = p_step(params, opt, batch)
        return params, opt
    """
)


def _programs():
    yield "train", TRAIN
    yield "no-signature", NO_SIGNATURE
    yield "no-signature-pmap", NO_SIGNATURE_PMAP
    yield "examples-train", (REPO / "examples" / "train.py").read_text()
    for path in sorted((REPO / "tests" / "lint" / "cases").glob("*.py")):
        yield f"case-{path.stem}", path.read_text()
    for rule_code, rule in RULES.items():
        for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid)):
            for i, example in enumerate(examples):
                yield f"{rule_code}-{kind}-{i}", example.code
                if example.fixed is not None:
                    yield f"{rule_code}-{kind}-{i}-fixed", example.fixed_code
    for case_id, before, _, after, _, _ in FIX_CASES:
        if "\r\n" not in before and not before.startswith("\ufeff"):
            yield f"fix-{case_id}-before", source_of(before)
            yield f"fix-{case_id}-after", source_of(after)


PROGRAMS = [pytest.param(text, id=name) for name, text in _programs()]


def _run_fix(project: Path, *flags: str) -> int:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        return fix_main(["--no-cache", "--quiet", *flags, "."])
    finally:
        os.chdir(cwd)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    return tmp_path


@pytest.mark.parametrize("flags", [pytest.param((), id="default"), pytest.param(("--unsafe-fixes",), id="unsafe")])
@pytest.mark.parametrize("text", PROGRAMS)
def test_second_run_changes_nothing(project, text, flags):
    program = project / "program.py"
    program.write_text(text)
    first = _run_fix(project, *flags)
    assert first in (0, 1)
    once = program.read_text()
    second = _run_fix(project, *flags)
    assert program.read_text() == once, "the second jaxmem-fix run edited its own output"
    # Exit 1 on the second run is allowed only for a file the first run could not fix either.
    assert second == 0 or (once == text and first == second == 1), "the second run reported a change"

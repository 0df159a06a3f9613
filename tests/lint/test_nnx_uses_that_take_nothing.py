"""Uses of an nnx object that take none of its arrays (``lint/values/nnx_ownership._takes_nothing``):
a Variable's metadata and comparisons leave the model its own; a use that hands out an
array, or an attribute of the Module itself named like metadata, keeps the doubt.  What
the donation does at run time: ``tests/codemod/test_fix_nnx_owned_runs.py``."""

import textwrap

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = """
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)
        self.shape = (2, 2)


@nnx.jit
def step(model, optimizer):
    optimizer.update(model, nnx.grad(lambda m: m.lin.kernel[...].sum())(model))


def main(other):
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    USE
    for _ in range(3):
        step(model, optimizer)
    return kept
"""


def _model(use: str):
    source = PROGRAM.replace("USE", use)
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    (found,) = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "model"]
    return found


@pytest.mark.parametrize("use", [
    "kept = model.lin.kernel.sharding",
    "kept = model.lin.kernel[...].shape[0]",
    "kept = model.lin.kernel.value.dtype",
    "kept = model.lin is not other",
    "kept = model.lin.kernel[...] == 0",
    "kept = 0 < model.lin.bias[...]",
    "kept = model is None",
])
def test_metadata_and_comparisons_take_no_array(use):
    found = _model(use)
    assert found.confidence is Confidence.HIGH, found.message


@pytest.mark.parametrize("use", [
    "kept = model.lin.kernel[...]",       # the very array
    "kept = model.lin.kernel",            # the Variable: its array read later
    "kept = model.shape",                 # the Module's own attribute: may hold anything
    "kept = model.lin.kernel[...] + 0",   # not a comparison: kept as a doubt
    "kept = [model.lin.kernel[...]] == other",  # the list holds the array before it is compared
])
def test_a_use_that_may_hand_out_an_array_keeps_the_doubt(use):
    found = _model(use)
    assert found.confidence is Confidence.MEDIUM, found.message
    assert "which may take its arrays" in found.message, found.message

"""Which object an ``nnx.jit`` step receives when ``model`` is bound in several
branches: only what may run after the binding that reaches the call, with that
object still bound, counts (``lint/values/nnx_ownership._one_object``).  Each
program's runtime behaviour is in ``tests/codemod/test_fix_nnx_notebook_runs.py``
(MODES); these pin the branch rules one by one."""

import textwrap

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

HEAD = """
import jax
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)


@nnx.jit
def step(model, optimizer):
    optimizer.update(model, nnx.grad(lambda m: m.lin.kernel[...].sum())(model))


def main(mode, flag):
"""


def _model_confidence(body: str) -> str | None:
    source = HEAD + textwrap.indent(textwrap.dedent(body), "    ")
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    found = [f.confidence.value for f in result.findings if f.code == "JXM001" and f.parameter_name == "model"]
    return found[0] if found else None


MADE = """
if mode == "train":
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    for _ in range(3):
        step(model, optimizer)
"""


@pytest.mark.parametrize("body,expected", [
    # the other branch of the if never runs with this object (there it is bound by
    # unpacking, which jaxmem does not follow: before, that made every object unproved)
    (MADE + "else:\n    model, kernel = MLP(nnx.Rngs(1)), None\n", "high"),
    (MADE.replace('if mode == "train"', 'if mode == "eval":\n    pass\nelif mode == "train"')
     + "else:\n    model, kernel = MLP(nnx.Rngs(1)), None\n", "high"),
    # a later block rebinds it before anything else
    (MADE + "if flag:\n    model, kernel = MLP(nnx.Rngs(2)), None\n    print(model)\n", "high"),
    # a later block takes its arrays before another step
    (MADE + "if flag:\n    before = jax.tree.leaves(nnx.state(model))\n    step(model, optimizer)\n    print(before)\n", "medium"),
    # a rebinding that may not run kills nothing
    (MADE + "if flag:\n    model = MLP(nnx.Rngs(2))\nbefore = jax.tree.leaves(nnx.state(model))\nstep(model, optimizer)\n"
     "print(before)\n", "medium"),
    # a rebinding that reads it (``model = Wrapper(model)``) reads this object
    (MADE + "model = keep(model)\nstep(model, optimizer)\n", "medium"),
], ids=["else-branch", "elif-chain", "rebound-in-a-later-block", "later-block-takes-arrays",
        "conditional-rebinding", "rebinding-reads-it"])
def test_only_what_may_run_after_the_binding_counts(body, expected):
    assert _model_confidence(body) == expected


def test_a_binding_in_a_loop_or_try_is_judged_by_every_occurrence():
    in_loop = """
    for seed in range(2):
        kernel = model.lin.kernel[...] if seed else None
        model = MLP(nnx.Rngs(seed))
        optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
        step(model, optimizer)
        print(kernel)
    """
    assert _model_confidence(in_loop) != "high"
    in_try = """
    model = MLP(nnx.Rngs(0))
    try:
        model = MLP(nnx.Rngs(1))
        optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
        before = jax.tree.leaves(nnx.state(model))
        step(model, optimizer)
        model = MLP(nnx.Rngs(2))
    except ValueError:
        print(before)
    """
    assert _model_confidence(in_try) != "high"

"""nnx objects made by a factory function of the same file
(``lint/values/nnx_ownership.nnx_factory``): which factories count.  What the
proved ones and three that share an array do when run is in
``tests/codemod/test_fix_nnx_factory_runs.py``; these pin each rule."""

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

HEAD = """
import functools

import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)


@nnx.jit
def step(model, optimizer):
    optimizer.update(model, nnx.grad(lambda m: m.lin.kernel[...].sum())(model))

"""

PAIR = """
def create(seed, lr=0.1):
    model = MLP(nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.sgd(lr), wrt=nnx.Param)
    return model, optimizer
"""

LOOP = """
def main():
    model, optimizer = {call}
    for _ in range(3):
        step(model, optimizer)
"""


def _confidences(factory: str, call: str = "create(0)") -> dict[str, str]:
    source = HEAD + factory + "\n" + LOOP.format(call=call)
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    return {f.parameter_name: f.confidence.value for f in result.findings if f.code == "JXM001"}


def test_a_factory_of_new_objects_proves_both():
    assert _confidences(PAIR) == {"model": "high", "optimizer": "high"}


def test_a_factory_may_call_another_and_keyword_arguments_hold_no_array():
    inner = PAIR.replace("def create(", "def _make(")
    outer = inner + "\n\ndef create(seed, lr=0.1):\n    model, optimizer = _make(seed, lr=lr)\n    return model, optimizer\n"
    assert _confidences(outer, "create(seed=0, lr=0.01)") == {"model": "high", "optimizer": "high"}


@pytest.mark.parametrize("factory,call", [
    # decorated: the decorator may return something else
    ("@functools.lru_cache\n" + PAIR, "create(0)"),
    # a second return, a generator
    (PAIR.replace("    model = ", "    if seed < 0:\n        return None, None\n    model = "), "create(0)"),
    (PAIR.replace("return model, optimizer", "yield model, optimizer"), "create(0)"),
    # one object returned twice; a view of the model beside it
    (PAIR.replace("return model, optimizer", "return model, model"), "create(0)"),
    (PAIR.replace("return model, optimizer", "return model, nnx.view(model)"), "create(0)"),
    # the factory runs the step itself, or hands the model to a call jaxmem cannot follow
    (PAIR.replace("    return", "    step(model, optimizer)\n    return"), "create(0)"),
    (PAIR.replace("    return", "    print(jnp.sum(model.lin.kernel[...]))\n    return"), "create(0)"),
    # the model is built from an array: an argument, a default, a module-level value
    (PAIR, "create(jnp.zeros(()))"),
    (PAIR.replace("lr=0.1", "lr=jnp.ones(())"), "create(0)"),
    # unpacked into a different number of names; starred
    (PAIR.replace("return model, optimizer", "return model, optimizer, None"), "create(0)"),
    (PAIR, "create(*[0])"),
    # the name is bound again at module level: a call may not reach the def
    (PAIR + "\ncreate = None\n", "create(0)"),
])
def test_factories_that_prove_nothing_leave_the_model_at_medium(factory, call):
    found = _confidences(factory, call)
    assert found.get("model") == "medium", found

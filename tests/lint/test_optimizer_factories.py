"""Which helpers count as returning a standard optax transform
(``lint/values/provenance.returns_new_state_optimizer``): every ``return`` must give
one, through locals bound only by plain top-level assignments.  What the donation
does at run time: ``tests/codemod/test_fix_optimizer_factory_runs.py``."""

import textwrap

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = """
import functools

import jax
import optax

HELPER


@jax.jit
def step(params, opt_state, grads):
    updates, opt_state = optax.adam(1e-3).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def main(params, grads, lr, other):
    params = jax.tree.map(lambda p: p * 2, params)
    opt_state = make(lr).init(params)
    for _ in range(3):
        params, opt_state = step(params, opt_state, grads)
    return params, opt_state
"""


def _opt_state(helper: str) -> str:
    source = PROGRAM.replace("HELPER", textwrap.dedent(helper).strip())
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    (found,) = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "opt_state"]
    return found.confidence.value


@pytest.mark.parametrize("helper", [
    "def make(lr):\n    return optax.adam(lr)",
    "def make(lr):\n    tx = optax.sgd(lr, momentum=0.9)\n    return tx",
    "def make(lr):\n    if lr > 1:\n        return optax.chain(optax.clip(1.0), optax.adamw(lr))\n    return optax.lion(lr)",
    "def inner(lr):\n    return optax.adam(lr)\n\n\ndef make(lr):\n    return optax.chain(optax.clip(1.0), inner(lr))",
    "def make(lr):\n    return optax.MultiSteps(optax.apply_if_finite(optax.adamw(lr), 3), every_k_schedule=4)",
    "def make(lr):\n    return optax.inject_hyperparams(optax.adamw)(learning_rate=1e-3, weight_decay=0.1)",
])
def test_a_helper_returning_standard_transforms_is_new_state(helper):
    assert _opt_state(helper) == "high"


@pytest.mark.parametrize("helper", [
    "def make(lr):\n    return other",                                   # a global: anything
    "def make(tx):\n    return tx",                                      # the caller's value
    "def make(lr):\n    tx = optax.adam(lr)\n    tx = optax.lookahead(tx, 5, 0.5)\n    return tx",
    "def make(lr):\n    if lr > 1:\n        return optax.adam(lr)\n    return optax.lookahead(optax.adam(lr), 5, 0.5)",
    "@functools.lru_cache\ndef make(lr):\n    return optax.adam(lr)",   # decorated: not followed
    "def make(lr):\n    for tx in [optax.adam(lr)]:\n        pass\n    return tx",  # bound by a loop
    "def make(lr):\n    return optax.chain(*[optax.adam(lr)])",         # spread: not followed
    "def make(lr):\n    return make(lr)",                                 # itself: not proved
    "def make(lr):\n    return optax.inject_hyperparams(optax.adamw)(learning_rate=lr)",  # lr may be an array
    "def make(lr):\n    yield optax.adam(lr)",                            # a generator
    "def make(lr):\n    tx = optax.adam(lr)\n    tx, n = optax.lookahead(tx, 5, 0.5), 1\n    return tx",
    "def make(lr):\n    tx = optax.adam(lr)\n    tx: optax.GradientTransformation = optax.lookahead(tx, 5, 0.5)\n"
    "    return tx",
    "def inner(lr):\n    return optax.adam(lr)\n\n\ndef make(lr):\n    def inner(lr):\n"
    "        return optax.lookahead(optax.adam(lr), 5, 0.5)\n    return inner(lr)",  # the local def, not the global
])
def test_any_other_helper_leaves_the_state_medium(helper):
    assert _opt_state(helper) == "medium"

"""Which optimizers count as standard optax transforms, whose ``init`` makes new
buffers only: wrappers and injected hyperparameters (``OPTAX_WRAPPERS``,
``OPTAX_INJECT`` in ``lint/values/array_api.py``: every inner transform standard,
no hyperparameter an array), and helpers (``lint/values/provenance.
returns_new_state_optimizer``: every ``return`` gives one, through locals bound only
by plain top-level assignments).  The buffers checked under real optax:
``tests/lint/test_array_api_facts.py``; what the donation does at run time:
``tests/codemod/test_fix_standard_optimizers_runs.py``."""

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


def _confidence(source: str) -> str:
    """The confidence of the JXM001 finding on the step's ``opt_state``."""
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    (found,) = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "opt_state"]
    return found.confidence.value


def _opt_state(helper: str) -> str:
    return _confidence(PROGRAM.replace("HELPER", textwrap.dedent(helper).strip()))


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


INLINE = """
import jax
import jax.numpy as jnp
import optax
from optax import contrib


@jax.jit
def step(params, opt_state, grads):
    updates, opt_state = optax.adam(1e-3).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def main(grads, lr, skip):
    params = {"w": jnp.ones((4, 4))}
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 100)
    tx = TRANSFORM
    opt_state = tx.init(params)
    for _ in range(3):
        params, opt_state = step(params, opt_state, grads)
    return params, opt_state
"""

KEEP = "optax.GradientTransformation(lambda p: {'start': p}, lambda u, s, p=None: (u, s))"


def _inline(transform: str) -> str:
    return _confidence(INLINE.replace("TRANSFORM", transform))


@pytest.mark.parametrize("transform", [
    "optax.apply_if_finite(optax.adamw(1e-3), max_consecutive_errors=5)",
    "optax.MultiSteps(optax.adam(1e-3), every_k_schedule=4)",
    "optax.MultiSteps(optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3)), 4, True)",
    "optax.masked(optax.adamw(1e-3), {'w': True})",
    "optax.conditionally_mask(optax.sgd(0.1), lambda count: count < 10)",
    "optax.multi_transform({'a': optax.adam(1e-3), 'b': optax.set_to_zero()}, {'w': 'a'})".replace(
        "optax.set_to_zero()", "optax.sgd(0.0)"),
    "optax.partition({'a': optax.adam(1e-3)}, {'w': 'a'})",
    "optax.named_chain(('clip', optax.clip(1.0)), ('adam', optax.adam(1e-3)))",
    "optax.inject_hyperparams(optax.adamw)(learning_rate=schedule, weight_decay=1e-4)",
    "optax.inject_hyperparams(optax.sgd)(0.1, momentum=0.9)",
    "contrib.muon(1e-3)",
    "contrib.schedule_free_adamw(1e-3, warmup_steps=10, b1=0.9)",
    "contrib.schedule_free(optax.adam(1e-3), schedule, b1=0.9)",
    "optax.chain(optax.clip(1.0), optax.scale_by_adam(), optax.scale_by_trust_ratio(), optax.scale(-1e-3))",
])
def test_a_wrapper_of_standard_transforms_is_new_state(transform):
    assert _inline(transform) == "high"


@pytest.mark.parametrize("transform", [
    f"optax.apply_if_finite({KEEP}, 5)",                                 # the inner keeps the params
    f"optax.multi_transform({{'a': optax.adam(1e-3), 'b': {KEEP}}}, {{'w': 'b'}})",
    "optax.multi_transform(transforms, {'w': 'a'})",                    # not a dict literal
    "optax.MultiSteps(optax.adam(1e-3), 4, should_skip_update_fn=skip)",  # a state of skip's choosing
    "optax.MultiSteps(optax.adam(1e-3), 4, True, skip)",
    "optax.named_chain(*pairs)",
    "optax.inject_hyperparams(optax.adamw)(learning_rate=lr)",           # lr may be an array: kept
    "optax.inject_hyperparams(optax.adamw)(learning_rate=jnp.asarray(1e-3, jnp.float32))",
    "optax.inject_hyperparams(optax.adamw)(learning_rate=lambda count: 1e-3)",  # its result is kept as it is
    "optax.inject_hyperparams(contrib.prodigy)(learning_rate=1.0)",     # prodigy keeps the params
    "contrib.schedule_free_adamw(1e-3, b1=lr)",                          # b1 may be an array: kept
    f"contrib.schedule_free({KEEP}, 1e-3)",
    "contrib.dadapt_adamw(1.0, estim_lr0=jnp.asarray(1e-6, jnp.float32))",
])
def test_any_other_wrapper_leaves_the_state_medium(transform):
    assert _inline(transform) == "medium"


# a mapping of transforms bound to a name first (flax's optimization cookbook: ``rates = {...}``,
# then ``optax.partition(rates, param_tys)``): standard when every binding is a dict literal
# of standard transforms and nothing is stored into it
@pytest.mark.parametrize("before,mapping,high", [
    ("    rates = {'a': optax.adam(1e-3), 'b': optax.sgd(0.1)}\n", "rates", True),
    ("", "RATES", True),
    ("    rates = {'a': optax.adam(1e-3)}\n    rates['b'] = make_other()\n", "rates", False),
    ("    rates = {'a': optax.adam(1e-3)}\n    rates.update(b=make_other())\n", "rates", False),
    ("    rates = {'a': optax.adam(1e-3)}\n    fill(rates)\n", "rates", False),
    ("    rates = {'a': optax.adam(1e-3)} if skip else make_other()\n", "rates", False),
    (f"    rates = {{'a': {KEEP}}}\n", "rates", False),
    ("    RATES['b'] = make_other()\n", "RATES", False),
])
def test_a_mapping_of_transforms_given_by_name(before, mapping, high):
    source = INLINE.replace("    tx = TRANSFORM", f"{before}    tx = optax.partition({mapping}, {{'w': 'a'}})")
    source = source.replace("\n\ndef main(", "\n\nRATES = {'a': optax.adam(1e-3)}\n\n\ndef main(", 1)
    assert "RATES = " in source
    assert _confidence(source) == ("high" if high else "medium")

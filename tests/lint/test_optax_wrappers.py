"""optax wrappers and injected hyperparameters (``OPTAX_WRAPPERS``, ``OPTAX_INJECT``
in ``lint/values/array_api.py``): ``tx.init(params)`` makes new buffers only when
every inner transform does and no hyperparameter is an array, so the step's
optimizer state is high; anything else keeps it medium.  The buffers checked
under real optax: ``tests/lint/test_array_api_facts.py``; the fixed program run:
``tests/codemod/test_fix_optax_wrappers_runs.py``."""

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = """
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


def _opt_state(transform: str) -> str:
    source = PROGRAM.replace("TRANSFORM", transform)
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    (found,) = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "opt_state"]
    return found.confidence.value


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
    "optax.chain(optax.clip(1.0), optax.scale_by_adam(), optax.scale_by_trust_ratio(), optax.scale(-1e-3))",
])
def test_a_wrapper_of_standard_transforms_is_new_state(transform):
    assert _opt_state(transform) == "high"


@pytest.mark.parametrize("transform", [
    f"optax.apply_if_finite({KEEP}, 5)",                                 # the inner keeps the params
    f"optax.multi_transform({{'a': optax.adam(1e-3), 'b': {KEEP}}}, {{'w': 'b'}})",
    "optax.multi_transform(transforms, {'w': 'a'})",                    # not a dict literal
    "optax.MultiSteps(optax.adam(1e-3), 4, should_skip_update_fn=skip)",  # a state of skip's choosing
    "optax.MultiSteps(optax.adam(1e-3), 4, True, skip)",
    "optax.named_chain(*pairs)",
    "optax.inject_hyperparams(optax.adamw)(learning_rate=lr)",           # lr may be an array: kept
    "optax.inject_hyperparams(optax.adamw)(learning_rate=jnp.asarray(1e-3, jnp.float32))",
    "optax.inject_hyperparams(contrib.prodigy)(learning_rate=1.0)",     # prodigy keeps the params
    "contrib.schedule_free_adamw(1e-3)",
])
def test_any_other_wrapper_leaves_the_state_medium(transform):
    assert _opt_state(transform) == "medium"

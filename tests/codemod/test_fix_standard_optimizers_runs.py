"""Optimizers whose ``init`` makes new buffers only (optax 0.2.8,
``tests/lint/test_array_api_facts.py``) make the step's donations high, and the
default ``jaxmem-fix`` donates the parameters and the optimizer state:

* one made by a helper of the same file (``tx = make_optimizer(lr, clip)``) whose
  every ``return`` gives a standard transform;
* one built the way training code builds it: a schedule injected as a
  hyperparameter, wrapped to skip non-finite steps and to accumulate gradients
  (``optax.MultiSteps(optax.apply_if_finite(optax.inject_hyperparams(optax.adamw)(
  learning_rate=schedule), 5), every_k_schedule=2)``), or schedule-free AdamW or a
  chain with muon in the same wrappers; the fixed program trains the same, and the
  optimizer state it started from is deleted.

A helper or a wrapper around a transform that keeps the parameters leaves them
medium, and forcing the donation crashes ("donate the same buffer twice")."""

import sys

import pytest

from fix_runs import crashes_when_forced, fix_and_rerun, last_line, report_of, run

pytest.importorskip("optax")

PREAMBLE = """\
import functools

import jax
import jax.numpy as jnp
import optax


def keep_params():
    return optax.GradientTransformation(lambda p: {"start": p}, lambda u, s, p=None: (u, s))


@functools.partial(jax.jit, static_argnums=3)  # the step
def step(params, opt_state, batch, tx):
    grads = jax.grad(lambda p: ((p["w"] * batch) ** 2).sum())(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state
"""

FACTORY = PREAMBLE + """

def make_optimizer(lr, clip):
    if clip:
        return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(lr))
    tx = optax.adam(lr)
    return tx


def main():
    tx = MAKER
    params = {"w": jnp.ones((4,)) * 2}
    opt_state = tx.init(params)
    for i in range(3):
        params, opt_state = step(params, opt_state, jnp.arange(4.0) * i, tx)
    print(round(float(params["w"].sum()), 4))


main()
"""

WRAPPED = PREAMBLE + """

def main():
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-2, 2, 10)
    tx = optax.MultiSteps(optax.apply_if_finite(INNER, 5), every_k_schedule=2)
    params = {"w": jnp.ones((4,)) * 2}
    opt_state = tx.init(params)
    for i in range(4):
        params, opt_state = step(params, opt_state, jnp.arange(4.0) * i, tx)
    print(round(float(params["w"].sum()), 4))


main()
"""

INJECTED = "optax.inject_hyperparams(optax.adamw)(learning_rate=schedule, weight_decay=1e-4)"
UNDONATED = "@functools.partial(jax.jit, static_argnums=3)  # the step"
DONATED = "@functools.partial(jax.jit, static_argnums=3, donate_argnums=(0, 1))  # the step"

# Runs the fixed program with MultiSteps.init recorded (unseen by the analysis), then
# says whether every array of the first optimizer state was deleted by the donation.
RUNNER = """\
import jax
import optax

made = []
original = optax.MultiSteps.init


def init(self, params):
    made.append(original(self, params))
    return made[-1]


optax.MultiSteps.init = init
exec(compile(open("train.py").read(), "train.py", "exec"), {"__name__": "__main__"})
leaves = [leaf for leaf in jax.tree.leaves(made[0]) if isinstance(leaf, jax.Array)]
print(len(leaves), all(leaf.is_deleted() for leaf in leaves))
"""


def _confidences(program: str) -> dict:
    return {f.parameter_name: f.confidence.value for f in report_of(program).findings if f.code == "JXM001"}


@pytest.mark.parametrize("maker", ["make_optimizer(1e-2, True)", "make_optimizer(1e-2, False)"])
def test_a_helper_that_returns_standard_transforms_makes_the_step_high_and_the_fix_runs(tmp_path, maker):
    program = FACTORY.replace("MAKER", maker)
    assert _confidences(program) == {"params": "high", "opt_state": "high"}
    fixed = fix_and_rerun(tmp_path, program).read_text()
    assert DONATED in fixed, fixed


@pytest.mark.parametrize("inner", [
    INJECTED,
    "optax.contrib.schedule_free_adamw(1e-2, warmup_steps=2, b1=0.9)",
    # jax-md's equivariant example: its muon chain (a vector: muon hands it to adam)
    "optax.chain(optax.clip_by_global_norm(100.0), optax.contrib.muon(learning_rate=schedule))",
])
def test_wrapped_standard_transforms_make_the_step_high_and_the_fixed_program_donates_the_state(tmp_path, inner):
    program = WRAPPED.replace("INNER", inner)
    assert _confidences(program) == {"params": "high", "opt_state": "high"}
    fixed = fix_and_rerun(tmp_path, program).read_text()
    assert DONATED in fixed, fixed
    (tmp_path / "runner.py").write_text(RUNNER)
    count, deleted = last_line(run(sys.executable, "runner.py", cwd=tmp_path)).split()
    assert int(count) > 5 and deleted == "True"


@pytest.mark.parametrize("program", [FACTORY.replace("MAKER", "keep_params()"),
                                     WRAPPED.replace("INNER", "keep_params()")])
def test_an_optimizer_that_may_keep_the_params_stays_medium_and_forcing_it_crashes(tmp_path, program):
    found = _confidences(program)
    assert found.get("params") != "high" and found.get("opt_state") != "high", found
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED, error="donate")


# optax.partition of a dict of transforms bound to a name first (flax's optimization cookbook)
PARTITIONED = PREAMBLE + """

def main():
    rates = {"fast": optax.adam(1e-2), "slow": MAKER}
    tx = optax.MultiSteps(optax.partition(rates, {"w": "fast", "b": "slow"}), every_k_schedule=2)
    params = {"w": jnp.ones((4,)) * 2, "b": jnp.ones((4,))}
    opt_state = tx.init(params)
    for i in range(4):
        params, opt_state = step(params, opt_state, jnp.arange(4.0) * i, tx)
    print(round(float(params["w"].sum()), 4))


main()
"""


def test_a_partition_of_a_named_dict_of_standard_transforms_is_high_and_the_fix_donates_its_state(tmp_path):
    program = PARTITIONED.replace("MAKER", "optax.sgd(1e-3, momentum=0.9)")
    assert _confidences(program) == {"params": "high", "opt_state": "high"}
    fixed = fix_and_rerun(tmp_path, program).read_text()
    assert DONATED in fixed, fixed
    (tmp_path / "runner.py").write_text(RUNNER)
    count, deleted = last_line(run(sys.executable, "runner.py", cwd=tmp_path)).split()
    assert int(count) > 3 and deleted == "True"


def test_a_partition_of_a_named_dict_with_a_transform_that_keeps_the_params_crashes_when_forced(tmp_path):
    program = PARTITIONED.replace("MAKER", "keep_params()")
    found = _confidences(program)
    assert found.get("params") != "high" and found.get("opt_state") != "high", found
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED, error="donate")

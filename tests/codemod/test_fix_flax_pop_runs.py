"""flax's basics guide splits what ``model.init`` returns with ``flax.core.pop``
(``state, params = flax.core.pop(variables, "params")``): two disjoint parts that
hold the variables' very arrays (flax 0.12.8, ``tests/lint/test_array_api_facts.py``).
With ``variables`` gone, both are the step's own and the default fix donates them;
with ``variables`` read after the loop, they are not, and forcing it crashes."""

import sys

import pytest

from fix_runs import crashes_when_forced, fix_and_rerun, report_of, run

pytest.importorskip("flax")
pytest.importorskip("optax")

PROGRAM = """\
import functools

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class BiasAdderWithRunningMean(nn.Module):
    decay: float = 0.99

    @nn.compact
    def __call__(self, x):
        ready = self.has_variable("batch_stats", "mean")
        mean = self.variable("batch_stats", "mean", lambda s: jnp.zeros(s), x.shape[1:])
        bias = self.param("bias", lambda rng, shape: jnp.zeros(shape), x.shape[1:])
        if ready:
            mean.value = self.decay * mean.value + (1.0 - self.decay) * jnp.mean(x, axis=0, keepdims=True)
        return x - mean.value + bias


@functools.partial(jax.jit, static_argnums=(0, 1))  # the step
def update_step(tx, apply_fn, x, opt_state, params, state):
    def loss(params):
        y, updated = apply_fn({"params": params, **state}, x, mutable=list(state.keys()))
        return ((x - y) ** 2).sum(), updated

    (_, state), grads = jax.value_and_grad(loss, has_aux=True)(params)
    updates, opt_state = tx.update(grads, opt_state)
    return opt_state, optax.apply_updates(params, updates), state


def main():
    model = BiasAdderWithRunningMean()
    x = jnp.arange(50.0).reshape(10, 5)
    variables = model.init(jax.random.key(0), x)
    state, params = flax.core.pop(variables, "params")
    AFTER_POP
    tx = optax.sgd(learning_rate=0.02)
    opt_state = tx.init(params)
    for _ in range(3):
        opt_state, params, state = update_step(tx, model.apply, x, opt_state, params, state)
    print(round(float(params["bias"].sum()), 4), round(float(state["batch_stats"]["mean"].sum()), 4))
    READ_LATER


main()
"""

# Runs train.py with flax.core.pop wrapped, to see the arrays it handed out (the analysis never sees this).
RUNNER = """\
import flax
import jax

handed = []
original = flax.core.pop


def pop(*args, **kwargs):
    out = original(*args, **kwargs)
    handed.extend(jax.tree.leaves(out))
    return out


flax.core.pop = pop
import train  # noqa: E402,F401  (runs the training)

print("popped arrays deleted:", all(leaf.is_deleted() for leaf in handed))
"""

UNDONATED = "@functools.partial(jax.jit, static_argnums=(0, 1))  # the step"
DONATED = "@functools.partial(jax.jit, static_argnums=(0, 1), donate_argnums=(4, 5))  # the step"


def _confidence(program: str) -> dict:
    return {f.parameter_name: f.confidence.value for f in report_of(program).findings if f.code == "JXM001"}


def test_the_popped_parts_are_donated_and_the_fixed_program_runs(tmp_path):
    program = PROGRAM.replace("AFTER_POP", "del variables").replace("    READ_LATER\n", "")
    assert _confidence(program) == {"params": "high", "state": "high"}
    (tmp_path / "runner.py").write_text(RUNNER)
    path = fix_and_rerun(tmp_path, program)
    assert DONATED.replace("functools.", "") in path.read_text().replace("functools.", ""), path.read_text()
    # the fixed step really deletes the arrays flax.core.pop handed it, with no warning
    done = run(sys.executable, "-W", "error", "runner.py", cwd=tmp_path)
    assert done.returncode == 0 and "popped arrays deleted: True" in done.stdout, done.stderr


def test_variables_read_after_the_loop_keep_the_parts_from_being_donated(tmp_path):
    program = PROGRAM.replace("    AFTER_POP\n", "").replace(
        "READ_LATER", 'print(round(float(variables["params"]["bias"].sum()), 4))')
    found = _confidence(program)
    assert found.get("params") != "high" and found.get("state") != "high", found
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED)

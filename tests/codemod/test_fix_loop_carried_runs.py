"""A state a loop passes back to the call that made it (``updates, state =
step(grads, state, params)`` in a ``for`` loop) is, from the second iteration
on, that call's own output: an output of the same computation has its shapes
and dtypes, so the donation is worth it even where jaxmem cannot see the jitted
body (an optimizer's ``update_fn`` unpacked from a factory's result).  Such a
proposal is high, the default fix applies it, and under jax 0.10.2 the fixed
step really takes the state's buffers (``is_deleted()``, no "not usable"
warning).  One call outside a loop proves nothing and stays medium."""

import warnings

import pytest
from fix_runs import fix_and_rerun, load

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = """
import jax
import jax.numpy as jnp


def make_optimizer(rate):
    def init_fn(params):
        return {"m": jax.tree.map(jnp.zeros_like, params)}

    def update_fn(grads, state, params):
        m = jax.tree.map(lambda a, g: rate * a + g, state["m"], grads)
        return m, {"m": m}

    return init_fn, update_fn


init_fn, update_fn = make_optimizer(0.9)
step = jax.jit(update_fn)


def train(num_steps):
    params = {"w": jnp.ones((4, 4))}
    grads = {"w": jnp.full((4, 4), 0.5)}
    opt_state = jax.jit(init_fn)(params)
STEPS
    return float(params["w"].sum())


if __name__ == "__main__":
    print(train(3))
"""

IN_A_LOOP = """\
    for _ in range(num_steps):
        updates, opt_state = step(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - 0.1 * u, params, updates)"""

ONCE = """\
    updates, opt_state = step(grads, opt_state, params)
    params = jax.tree.map(lambda p, u: p - 0.1 * u, params, updates)"""

RESET = """
from functools import partial

import jax


def make_state(key):
    return {"obs": jax.random.normal(key, (4, 3))}


@partial(jax.jit, keep_unused=True)
def reset(state_donated, key):
    return make_state(key)


def main(rounds):
    key = jax.random.PRNGKey(0)
    state = make_state(key)
STEPS
    return float(state["obs"].sum())


if __name__ == "__main__":
    print(main(3))
"""


def _proposal(source: str, parameter: str):
    """The JXM001 finding on ``parameter`` (a name, or ``argument N`` where no signature is seen)."""
    facts = facts_for_file("train.py", source, ALL, project_hints({"train.py": source}))
    (result,) = report([facts], ALL)
    (found,) = [f for f in result.findings if f.code == "JXM001" and f.message.split("`")[3] == parameter]
    return found


def test_a_state_carried_around_a_loop_is_high_where_the_body_is_not_visible(tmp_path):
    program = PROGRAM.replace("STEPS", IN_A_LOOP)
    finding = _proposal(program, "argument 1")
    assert finding.confidence is Confidence.HIGH, finding.message
    assert any("own result of the loop's previous iteration" in e.message for e in finding.evidence)
    fixed = load(fix_and_rerun(tmp_path, program))
    params = {"w": jax.numpy.ones((4, 4))}
    grads = {"w": jax.numpy.full((4, 4), 0.5)}
    state = fixed["init_fn"](params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail here
        for _ in range(2):
            passed = state
            _, state = fixed["step"](grads, passed, params)
            assert passed["m"]["w"].is_deleted()  # the fixed step took its buffers
    assert not params["w"].is_deleted()


def test_one_call_outside_a_loop_proves_nothing_and_stays_medium():
    finding = _proposal(PROGRAM.replace("STEPS", ONCE), "argument 1")
    assert finding.confidence is Confidence.MEDIUM
    assert "the body of `step` is not visible" in finding.message


def test_a_call_in_a_loop_and_another_outside_stay_medium():
    steps = ONCE + "\n" + IN_A_LOOP
    finding = _proposal(PROGRAM.replace("STEPS", steps), "argument 1")
    assert finding.confidence is Confidence.MEDIUM


def test_a_reset_that_never_reads_the_state_is_high_in_a_loop_and_really_reuses_it(tmp_path):
    # brax's ppo ``reset_fn_donated_env_state``: jax.jit(..., keep_unused=True) returns a new
    # state of the same structure, which takes the donated buffers
    program = RESET.replace("STEPS", "    for _ in range(rounds):\n        state = reset(state, key)")
    finding = _proposal(program, "state_donated")
    assert finding.confidence is Confidence.HIGH, finding.message
    fixed = load(fix_and_rerun(tmp_path, program))
    key = jax.random.PRNGKey(0)
    state = fixed["make_state"](key)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fixed["reset"](state, key)
    assert state["obs"].is_deleted()



def test_a_state_that_comes_back_through_another_call_proves_nothing():
    # brax's ppo loop: ``env_state = training_epoch(..., env_state, ...)`` then
    # ``env_state = reset_fn(env_state, key)``: what reaches the reset is the epoch's result,
    # whose shapes only the epoch decides
    steps = ("    for _ in range(rounds):\n"
             "        state = advance(state)\n"
             "        state = reset(state, key)")
    program = RESET.replace("STEPS", steps).replace(
        "def main(", "def advance(state):\n    return {\"obs\": state[\"obs\"][:2]}\n\n\ndef main(")
    finding = _proposal(program, "state_donated")
    assert finding.confidence is Confidence.MEDIUM, finding.message
    assert "never reads `state_donated`" in finding.message

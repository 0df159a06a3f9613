"""A helper's straight-line rebinding replaces what a name held (brax's ppo
``training_epoch_with_timing``: ``state = strip(state); result = epoch(state);
state = strip(result); return state``): its result is what the jitted epoch
made, not the caller's value.  Only names the body binds nowhere else (no
branch, loop, closure, lazy generator, ``nonlocal``, ``+=``) are read this way;
a rebinding on some paths only still returns the caller's value, and there the
donation that a high proposal would write really crashes (jax 0.10.2)."""

import warnings

import libcst as cst
import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, load

from jaxmem.findings import Confidence
from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.lint.values.provenance import straight_line_names, summarize_function
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = """
import jax
import jax.numpy as jnp


def strip(tree):
    return jax.tree.map(lambda x: jnp.asarray(x), tree)  # may hand back the very arrays


@jax.jit
def update(state, batch):
    return {"w": state["w"] + batch}, {"loss": jnp.sum(batch)}


def train_epoch(state, batch):
HELPER


def _decay(state):
    return {"w": state["w"] * 0.5}


decay = jax.jit(_decay)


def main(rounds, warm):
    state = {"w": jnp.ones((4, 4))}
    batch = jnp.ones((4, 4))
    backup = state
    for _ in range(rounds):
        state, metrics = train_epoch(state, batch)
        state = decay(state)
    return float(state["w"].sum()), float(metrics["loss"]), float(backup["w"].sum())


if __name__ == "__main__":
    print(main(3, warm=False))
"""

STRAIGHT = """\
    state = strip(state)
    state, metrics = update(state, batch)
    state = strip(state)
    return state, metrics"""

# ``warm`` is False in the run: the helper hands back the caller's own state, which
# ``backup`` still holds, and a donating ``decay`` deletes it
ON_A_BRANCH = """\
    metrics = {"loss": jnp.sum(batch)}
    if warm:
        state, metrics = update(state, batch)
    return state, metrics""".replace("warm", "batch.shape[0] > 4")

IN_A_LOOP = """\
    metrics = {"loss": jnp.sum(batch)}
    for _ in range(batch.shape[0] - 4):
        state, metrics = update(state, batch)
    return state, metrics"""

UNDONATED = "decay = jax.jit(_decay)"
DONATED = "decay = jax.jit(_decay, donate_argnums=0)"


def _decay_proposal(program: str):
    facts = facts_for_file("train.py", program, ALL, project_hints({"train.py": program}))
    (result,) = report([facts], ALL)
    (found,) = [f for f in result.findings if f.code == "JXM001" and f.message.startswith("`decay`")]
    return found


def test_a_helper_that_rebinds_its_parameter_on_the_straight_line_returns_new_memory(tmp_path):
    program = PROGRAM.replace("HELPER", STRAIGHT)
    finding = _decay_proposal(program)
    assert finding.confidence is Confidence.HIGH, finding.message
    fixed = load(fix_and_rerun(tmp_path, program))
    state = {"w": jax.numpy.ones((4, 4))}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail here
        state, _ = fixed["train_epoch"](state, jax.numpy.ones((4, 4)))
        fixed["decay"](state)
    assert state["w"].is_deleted()  # the fixed decay took the epoch's new buffers


@pytest.mark.parametrize("helper", [ON_A_BRANCH, IN_A_LOOP], ids=["branch", "loop"])
def test_a_rebinding_on_some_paths_only_still_returns_the_callers_value(tmp_path, helper):
    program = PROGRAM.replace("HELPER", helper)
    finding = _decay_proposal(program)
    assert finding.confidence is Confidence.MEDIUM, finding.message
    assert "train_epoch(state, batch)" in finding.message
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED)


def _function(body: str) -> tuple[cst.FunctionDef, ImportTable]:
    module = cst.parse_module(f"import jax\n\n\ndef f(state, n):\n{body}\n")
    (function,) = [stmt for stmt in module.body if isinstance(stmt, cst.FunctionDef)]
    return function, ImportTable.from_module(module)


def _returned(body: str) -> tuple[str, ...]:
    """The parameters the summary of ``def f(state, n)`` with ``body`` says it may return,
    ``advance`` being a jitted callable (new buffers)."""
    function, imports = _function(body)
    return summarize_function(function, imports, new_memory=frozenset({"advance"})).returned


def test_the_straight_line_replaces_a_parameter():
    assert _returned("    state = advance(state)\n    return state") == ()
    assert _returned("    state, m = advance(state)\n    return state, m") == ()
    assert _returned("    state: dict = advance(state)\n    return state") == ()
    assert _returned("    old = state\n    state = advance(state)\n    return state, old") == ("state",)
    assert _returned("    state = advance(state)\n    state = n\n    return state") == ("n",)


@pytest.mark.parametrize("body", [
    "    if n:\n        state = advance(state)\n    return state",
    "    for _ in range(n):\n        state = advance(state)\n    return state",
    "    state = advance(state)\n    try:\n        state = n\n    finally:\n        pass\n    return state",
])
def test_a_rebinding_in_a_block_keeps_the_parameter(body):
    assert "state" in _returned(body)


@pytest.mark.parametrize("body", [
    "    state = advance(state)\n    for state in [state, n]:\n        pass\n    return state",
    "    get = lambda: state\n    state = advance(state)\n    return get()",
    "    later = (state for _ in range(n))\n    state = advance(state)\n    return later",
    "    def keep():\n        return state\n    state = advance(state)\n    return keep()",
    "    state = advance(state)\n    with open(n) as state:\n        pass\n    return state",
    "    state = advance(state)\n    state += n\n    return state",
    "    state = advance(state)\n    (state := n)\n    return state",
    "    state = advance(state)\n    del state\n    return n",
    "    global state\n    state = advance(n)\n    return state",
], ids=["loop target", "lambda", "generator", "closure", "with", "augmented", "walrus", "del", "global"])
def test_a_name_bound_or_read_otherwise_is_not_straight(body):
    function, _ = _function(body)
    assert "state" not in straight_line_names(function)
    assert "state" in straight_line_names(_function("    state = advance(state)\n    return state")[0])


def test_a_jitted_callable_a_body_binds_itself_is_not_new_memory():
    assert _returned("    advance = n\n    state = advance(state)\n    return state") == ("state",)

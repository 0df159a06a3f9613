"""A helper that builds the state by storing into a container or object
(``d["w"] = w``, ``out.append(w)``, ``box.w = w``) returns what it stored:
jaxmem's summary of the helper follows those stores, and a mutating call's
receiver, like assignments.  Each held pattern below was proposed at high
confidence before, and the donation it asked for crashes the program (jax
0.10.2): a stored argument read after the steps is deleted, and one array
stored under two keys is "the same buffer twice".  A helper that stores only
new arrays stays high and its fix runs."""

import pytest
from fix_runs import crashes_when_forced, fix_and_rerun

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = """
import jax
import jax.numpy as jnp


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x + 1.0, state)


HELPER


def train(steps):
    w = jnp.ones(3)
    state = make(w)
    for _ in range(steps):
        state = step(state)
    return float(jax.tree.leaves(state)[0].sum()) + float(w.sum())


if __name__ == "__main__":
    print(train(3))
"""

# Helpers whose result holds ``w`` itself (read after the steps): donating it deletes ``w``.
HOLDING_W = {
    "subscript": 'def make(w):\n    d = {}\n    d["w"] = w\n    return d\n',
    "append": "def make(w):\n    out = []\n    out.append(w)\n    return out\n",
    "attribute": ("class Box:\n    pass\n\n\njax.tree_util.register_pytree_node(\n"
                  "    Box, lambda b: ((b.w,), None), lambda aux, c: _box(*c))\n\n\n"
                  "def _box(w):\n    b = Box()\n    b.w = w\n    return b\n\n\n"
                  "def make(w):\n    b = Box()\n    b.w = w\n    return b\n"),
    "rebound-parameter": "def make(w):\n    w = [w]\n    return w\n",
}

# Helpers whose result holds one new array twice: "Attempt to donate the same buffer twice".
HOLDING_TWICE = {
    "two-keys": 'def make(w):\n    z = jnp.zeros(3)\n    d = {}\n    d["a"] = z\n    d["b"] = z\n    return d\n',
    "append-in-a-loop": "def make(w):\n    z = jnp.zeros(3)\n    out = []\n    for _ in range(2):\n"
                        "        out.append(z)\n    return out\n",
}


def _proposals(source: str) -> dict[str, tuple[str, str]]:
    """``parameter -> (confidence, message)`` of the JXM001 findings on ``source``."""
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    return {f.parameter_name: (f.confidence.value, f.message) for f in result.findings if f.code == "JXM001"}


@pytest.mark.parametrize("name", list(HOLDING_W))
def test_a_helper_that_stores_an_argument_read_later_is_not_proposed_high(tmp_path, name):
    program = PROGRAM.replace("HELPER", HOLDING_W[name])
    confidence, message = _proposals(program)["state"]
    assert confidence == "medium" and "`w`" in message, message
    crashes_when_forced(tmp_path, program, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n")


@pytest.mark.parametrize("name", list(HOLDING_TWICE))
def test_a_helper_that_stores_one_array_twice_is_not_proposed_high(tmp_path, name):
    program = PROGRAM.replace("HELPER", HOLDING_TWICE[name])
    confidence, message = _proposals(program)["state"]
    assert confidence == "medium" and "two places" in message, message
    crashes_when_forced(tmp_path, program, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")


def test_a_helper_that_stores_new_arrays_is_proposed_and_its_fix_runs(tmp_path):
    helper = 'def make(w):\n    d = {}\n    d["a"] = w * 2.0\n    d["b"] = jnp.zeros(3)\n    return d\n'
    program = PROGRAM.replace("HELPER", helper)
    assert _proposals(program)["state"][0] == "high"
    fix_and_rerun(tmp_path, program)

"""A call jaxmem does not know may return one array in two places: jax-md's
``npt_nose_hoover`` init holds one new zero as its box position and its box
momentum, and any library or unseen module may do the same.  Donating such a
value as made fails with "Attempt to donate the same buffer twice" (jax
0.10.2), so a state made by an unknown call, directly or through a helper, is
never proposed at high confidence.  A call known to build distinct arrays
(``nnx.Rngs``, a flax.nnx layer, ``flax.jax_utils.replicate``, jax.numpy) keeps
the proposal high, and its fix runs."""

import json

import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, run, tool

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

# A module the analysed file imports but jaxmem is not given: its calls are unknown.
MAKER = """
import jax.numpy as jnp


def make_state(n):
    zero = jnp.zeros((n,))
    return {"position": zero, "momentum": zero}
"""

PROGRAM = """
import jax
import jax.numpy as jnp
from maker import make_state


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x + 1.0, state)


def train(steps):
    state = make_state(4)
    for _ in range(steps):
        state = step(state)
    return float(state["position"].sum())


if __name__ == "__main__":
    print(train(3))
"""

THROUGH_A_HELPER = PROGRAM.replace("    state = make_state(4)\n", "    state = build(4)\n").replace(
    "\n\ndef train(", "\n\ndef build(n):\n    return make_state(n)\n\n\ndef train(")

# A helper that rebinds its parameter to the unknown call's result (its summary used to
# say only "returns its parameter").
THROUGH_A_REBOUND_PARAMETER = PROGRAM.replace("    state = make_state(4)\n", "    state = build(None)\n").replace(
    "\n\ndef train(", "\n\ndef build(state):\n    state = make_state(4)\n    return state\n\n\ndef train(")


def _proposals(source: str) -> dict[str, tuple[str, str]]:
    """``parameter -> (confidence, message)`` of the JXM001 findings on ``source``."""
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    return {f.parameter_name: (f.confidence.value, f.message) for f in result.findings if f.code == "JXM001"}


@pytest.mark.parametrize("program", [PROGRAM, THROUGH_A_HELPER, THROUGH_A_REBOUND_PARAMETER],
                         ids=["direct", "helper", "helper-rebinding-its-parameter"])
def test_a_state_an_unknown_call_made_is_not_proposed_high(tmp_path, program):
    (tmp_path / "maker.py").write_text(MAKER)
    confidence, message = _proposals(program)["state"]
    assert confidence == "medium"
    assert "may hold one array" in message
    crashes_when_forced(tmp_path, program, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")


NNX_PROGRAM = """
import jax
import jax.numpy as jnp
from flax import jax_utils, nnx


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def train(steps):
    state = {"layer": nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0))), "copies": jax_utils.replicate(jnp.ones(3))}
    for _ in range(steps):
        state = step(state)
    return float(state["copies"].sum())


if __name__ == "__main__":
    print(train(3))
"""


def test_calls_known_to_build_distinct_arrays_keep_the_proposal_high(tmp_path):
    assert _proposals(NNX_PROGRAM)["state"][0] == "high"
    fix_and_rerun(tmp_path, NNX_PROGRAM)


VMAPPED = """
import jax
import jax.numpy as jnp


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x + 1.0, state)


def train(steps):
    state = jax.vmap(lambda q: {"position": q, "momentum": q})(jnp.ones((4, 3)))
    for _ in range(steps):
        state = step(state)
    return float(state["position"].sum())


if __name__ == "__main__":
    print(train(3))
"""


def test_a_vmapped_function_that_returns_its_input_twice_is_not_proposed_high(tmp_path):
    # jax.vmap(lambda q: (q, q))(qs) returns qs itself in both places (jax 0.10.2)
    confidence, message = _proposals(VMAPPED)["state"]
    assert confidence == "medium" and "may hold one array" in message
    crashes_when_forced(tmp_path, VMAPPED, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")


# A pytree class of the file whose __init__ stores one new array in two attributes.
CLASS = """
import jax
import jax.numpy as jnp


@jax.tree_util.register_pytree_node_class
class State:
    def __init__(self, n):
        zero = jnp.zeros((n,))
        self.position = zero
        self.momentum = zero

    def tree_flatten(self):
        return (self.position, self.momentum), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.position, obj.momentum = children
        return obj


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x + 1.0, state)


def make():
    return State(4)


def train(steps):
    state = State(4)
    for _ in range(steps):
        state = step(state)
    return float(state.position.sum())


if __name__ == "__main__":
    print(train(3))
"""


@pytest.mark.parametrize("program", [CLASS, CLASS.replace("    state = State(4)\n", "    state = make()\n")],
                         ids=["direct", "helper"])
def test_a_class_whose_init_stores_one_array_twice_is_not_proposed_high(tmp_path, program):
    confidence, message = _proposals(program)["state"]
    assert confidence == "medium" and "two" in message
    crashes_when_forced(tmp_path, program, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")


def test_a_class_whose_init_stores_distinct_arrays_is_proposed_and_runs(tmp_path):
    program = CLASS.replace("        self.momentum = zero\n", "        self.momentum = jnp.zeros((n,))\n")
    assert _proposals(program)["state"][0] == "high"
    fix_and_rerun(tmp_path, program)


# The same class in another module of the project, made here (``from states import State``).
STATES = CLASS[:CLASS.index("@jax.jit\n")]
IMPORTED = CLASS.replace(STATES, "import jax\nimport jax.numpy as jnp\nfrom states import State\n\n\n")


def _project_proposals(folder, states: str, program: str) -> dict[str, str]:
    """``parameter -> confidence`` of ``jaxmem check`` on ``states.py`` and ``train.py`` at ``folder``."""
    (folder / "pyproject.toml").write_text("")
    (folder / "states.py").write_text(states)
    (folder / "train.py").write_text(program)
    result = run(tool("jaxmem"), "check", "--no-cache", "--format", "json", "--min-confidence", "low", ".",
                 cwd=folder)
    return {f["parameter"]["name"]: f["confidence"] for f in json.loads(result.stdout)["findings"]
            if f["code"] == "JXM001"}


def test_a_class_of_another_module_whose_init_stores_one_array_twice_is_not_proposed_high(tmp_path):
    assert _project_proposals(tmp_path, STATES, IMPORTED) == {"state": "medium"}
    crashes_when_forced(tmp_path, IMPORTED, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")


def test_a_class_of_another_module_that_stores_distinct_arrays_is_proposed_and_runs(tmp_path):
    states = STATES.replace("        self.momentum = zero\n", "        self.momentum = jnp.zeros((n,))\n")
    assert _project_proposals(tmp_path, states, IMPORTED) == {"state": "high"}
    fix_and_rerun(tmp_path, IMPORTED)

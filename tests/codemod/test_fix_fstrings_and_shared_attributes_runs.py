"""Two things flax's pytree guide (``docs_nnx/guides/pytree.ipynb``) showed.

An f-string's prefix is not a mention of a function named ``f``: a jitted
``f`` in a file of ``print(f"...")`` was "used other than called", so every
donation of it was medium.  Now the code between an f-string's braces counts
and the rest of it does not.

That exposed a class whose ``__init__`` stores one attribute's value again
in another (``self.right = self.left``): nnx.jit sees the shared object once,
but jax.jit flattens an nnx object as a pytree, one leaf per place, and
donating it fails with "Attempt to donate the same buffer twice" (flax
0.12.8, jax 0.10.2).  Such a class now makes its instances medium for any
jit, nnx classes included; nnx.jit's own proposal stays high and runs.
"""

import sys

import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, report_of, run

pytest.importorskip("jax")

FSTRINGS = """
import sys

import jax
import jax.numpy as jnp


@jax.jit
def f(state):
    return {"w": state["w"] * 0.5, "step": state["step"] + 1}


def main():
    state = {"w": jnp.ones(4), "step": jnp.zeros(())}
    print(f"before: {float(state['w'].sum()) = }")
    first = state["w"]
    for _ in range(3):
        state = f(state)
        print(f"f {{step}}: {int(state['step'])}")
    print(f"after: {float(state['w'].sum())}")
    print(f"first deleted: {first.is_deleted()}", file=sys.stderr)


if __name__ == "__main__":
    main()
"""

SHARED = """
import jax
import jax.numpy as jnp
from flax import nnx


class Shared(nnx.Pytree):
    def __init__(self):
        self.x = jnp.ones(3)


class Parent(nnx.Pytree):
    def __init__(self):
        self.left = Shared()
        self.right = self.left  # one object in two places


JIT
def f(m):
    m.left.x = m.left.x * 2.0
    return m


m = Parent()
m = f(m)
print(float(m.left.x.sum()))
"""


def _confidence(program: str, parameter: str) -> tuple[str, str]:
    (finding,) = [f for f in report_of(program).findings if f.code == "JXM001" and f.parameter_name == parameter]
    return finding.confidence.value, finding.message


def test_a_jitted_f_in_a_file_of_fstrings_is_proposed_high_and_its_fix_runs(tmp_path):
    assert _confidence(FSTRINGS, "state")[0] == "high"
    fixed = fix_and_rerun(tmp_path, FSTRINGS)  # prints the same
    assert "donate_argnums" in fixed.read_text()
    # and runs with its state donated: the first state's array is deleted
    assert "first deleted: True" in run(sys.executable, fixed.name, cwd=tmp_path).stderr


def test_an_fstring_field_naming_f_still_counts_as_a_use(tmp_path):
    handed_on = FSTRINGS.replace('print(f"before:', 'print(f"{jax.jit(f)=}")\n    print(f"before:')
    confidence, message = _confidence(handed_on, "state")
    assert confidence == "medium" and "other than called" in message, message


def test_jax_jit_of_an_nnx_object_holding_one_object_twice_stays_medium_and_crashes_when_forced(tmp_path):
    program = SHARED.replace("JIT", "@jax.jit")
    confidence, message = _confidence(program, "m")
    assert confidence == "medium" and "`self.left` in a second attribute" in message, message
    crashes_when_forced(tmp_path, program, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")


def test_nnx_jit_of_the_same_object_is_proposed_high_and_its_fix_runs(tmp_path):
    program = SHARED.replace("JIT", "@nnx.jit")
    assert _confidence(program, "m")[0] == "high"
    fixed = fix_and_rerun(tmp_path, program)
    assert "donate_argnums" in fixed.read_text()


RAW_TWICE = """
import jax
import jax.numpy as jnp
from flax import nnx


class M(nnx.Module):
    def __init__(self):
        z = jnp.ones(3)
        self.a = z  # one array, not a Variable, in two places
        self.b = z


@nnx.jit
def step(m):
    m.a = m.a * 2.0


m = M()
for _ in range(3):
    step(m)
print(m.a)
"""


def test_nnx_jit_of_an_object_holding_one_array_twice_stays_medium_and_crashes_when_forced(tmp_path):
    # nnx.jit sees a shared Variable or Module once, a shared array twice: the nnx check
    # took every object of a local nnx class made from array-free arguments as its own.
    confidence, message = _confidence(RAW_TWICE, "m")
    assert confidence == "medium" and "`M.__init__` stores `z` in two attributes" in message, message
    crashes_when_forced(tmp_path, RAW_TWICE, "@nnx.jit\n", "@nnx.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")


SHARED_RNGS = """
import jax
import jax.numpy as jnp
from flax import nnx


class Noisy(nnx.Module):
    def __init__(self, din, dout, rngs):
        self.linear = nnx.Linear(din, dout, rngs=rngs)
        self.rngs = rngs  # the caller's Rngs, kept


class Model(nnx.Module):
    def __init__(self, din, dmid, dout, rngs):
        self.first = Noisy(din, dmid, rngs)  # dmid in two layers is an int;
        self.second = Noisy(dmid, dout, rngs)  # rngs in two places is one nnx.Rngs


@jax.jit
def step(graphdef, state):
    model = nnx.merge(graphdef, state)
    model.first.linear.kernel.value = model.first.linear.kernel.value * 0.5
    return nnx.state(model)


def main():
    model = Model(2, 8, 3, nnx.Rngs(0))
    TAKE
    print(float(jax.tree.leaves(state)[0].sum()))


main()
"""
THROUGH_SPLIT = "graphdef, state = nnx.split(model)\n    for _ in range(3):\n        state = step(graphdef, state)"


def test_an_nnx_object_sharing_an_rngs_is_one_state_after_nnx_split_proposed_high_and_its_fix_runs(tmp_path):
    program = SHARED_RNGS.replace("TAKE", THROUGH_SPLIT)
    assert _confidence(program, "state")[0] == "high"
    fixed = fix_and_rerun(tmp_path, program)
    assert "donate_argnums" in fixed.read_text()


def test_the_same_object_given_to_jax_jit_whole_stays_medium_and_crashes_when_forced(tmp_path):
    # jax.jit flattens the Module as a pytree: the shared Rngs' key is two leaves
    whole = SHARED_RNGS.replace(
        "@jax.jit\ndef step(graphdef, state):\n    model = nnx.merge(graphdef, state)\n",
        "@jax.jit\ndef step(model):\n").replace(
        "    return nnx.state(model)\n", "    return model\n").replace(
        "TAKE", "for _ in range(3):\n        model = step(model)\n    state = nnx.state(model)")
    confidence, message = _confidence(whole, "model")
    assert confidence == "medium" and "stores `rngs` in two attributes" in message, message
    crashes_when_forced(tmp_path, whole, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n",
                        error="donate the same buffer twice")

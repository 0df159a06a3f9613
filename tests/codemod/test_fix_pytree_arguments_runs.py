"""A pytree written out in the call, ``(w, s), loss = update((w, s), batch)``
(trax's trainer), donates each of its elements: jaxmem judges it element by
element, as safe as its least safe element.  Before, such an argument was
assumed read later and dropped without a word.  Each claim runs on jax here."""

import sys
import warnings

import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, load, report_of, run

from jaxmem.findings import Confidence

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

PROGRAM = """
import functools

import jax
import jax.numpy as jnp


@jax.jit
def update(weights_and_slots, batch):
    weights, slots = jax.tree.leaves(weights_and_slots)
    return (weights - 0.1 * batch, slots + batch), batch.sum()


def train(rounds):
    w = jnp.ones(4)
    s = jnp.zeros(4)
    for i in range(rounds):
        batch = jnp.full(4, float(i))
BODY
    return float(w.sum()), float(s.sum())


if __name__ == "__main__":
    print(train(3))
"""

TUPLE = "        (w, s), loss = update((w, s), batch)"
LIST = "        (w, s), loss = update([w, s], batch)"
DICT = '        (w, s), loss = update({"a": w, "b": s}, batch)'
# each of these keeps a value the donation would delete
READ_AFTER = "        (w2, s), loss = update((w, s), batch)\n        w = w2 + w"
TWICE = "        (w, s), loss = update((w, w), batch)"
ALSO_PASSED = "        (w, s), loss = update((w, s), w)"
KEPT = "        kept = [w]\n        (w, s), loss = update((w, s), batch)\n        w = w + kept[0]"

UNDONATED = "@jax.jit\ndef update"
DONATED = "@functools.partial(jax.jit, donate_argnums=0)\ndef update"


def _result(program: str):
    return report_of(program)


def _about(findings, name="weights_and_slots"):
    return [f for f in findings if f"`{name}`" in f.message]


@pytest.mark.parametrize("body", [TUPLE, LIST, DICT], ids=["tuple", "list", "dict"])
def test_a_pytree_of_dead_locals_is_donated_and_runs(tmp_path, body):
    program = PROGRAM.replace("BODY", body)
    (finding,) = _about(_result(program).findings)
    assert finding.code == "JXM001" and finding.confidence is Confidence.HIGH, finding.message
    path = fix_and_rerun(tmp_path, program)
    w, s = jnp.ones(4), jnp.zeros(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail here
        load(path)["update"]((w, s), jnp.ones(4))
    assert w.is_deleted() and s.is_deleted()


@pytest.mark.parametrize("body,error", [(READ_AFTER, "deleted"), (KEPT, "deleted"),
                                        (TWICE, "donate the same buffer twice"),
                                        (ALSO_PASSED, "previously donated in the same call")],
                         ids=["read after", "kept", "twice", "also passed"])
def test_a_pytree_holding_a_value_still_needed_is_not_proposed(tmp_path, body, error):
    program = PROGRAM.replace("BODY", body)
    assert not [f for f in _about(_result(program).findings) if f.confidence is Confidence.HIGH]
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED, error)


def test_an_element_owned_elsewhere_makes_the_pytree_medium():
    program = PROGRAM.replace("BODY", "        (w, STATE.s), loss = update((w, STATE.s), batch)").replace(
        "\n\ndef train", "\n\nclass State:\n    s = jnp.zeros(4)\n\n\nSTATE = State()\n\n\ndef train")
    (finding,) = _about(_result(program).findings)
    assert finding.confidence is Confidence.MEDIUM and "`STATE.s`" in finding.message, finding.message


def test_a_read_after_a_written_donation_of_a_pytree_is_a_use_after_donation(tmp_path):
    program = PROGRAM.replace("BODY", "        (w2, s), loss = update((w, s), batch)\n        w = w2 + w").replace(
        UNDONATED, DONATED)
    (finding,) = [f for f in _result(program).findings if f.code == "JXM101"]
    assert "`w`" in finding.message, finding.message
    crashed = run(sys.executable, "-c", program, cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr, crashed.stderr


def test_a_numpy_element_read_later_does_not_keep_the_pytree_open(tmp_path):
    # jit copies host data in: the donation deletes ``w`` and leaves ``host`` as it was
    body = "        host = np.full(4, float(i))\n        (w, s), loss = update((w, host), batch)\n        s = s + host"
    program = PROGRAM.replace("BODY", body).replace("import jax.numpy as jnp\n", "import jax.numpy as jnp\nimport numpy as np\n")
    (finding,) = _about(_result(program).findings)
    assert finding.code == "JXM001" and finding.confidence is Confidence.HIGH, finding.message
    fix_and_rerun(tmp_path, program)

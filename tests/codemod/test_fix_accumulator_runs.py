"""An accumulator that starts as a copy of a fresh value (fedjax's ``tree_mean``):

    for pytree, weight in pairs:
        weighted = tree_weight(pytree, weight)      # new buffers every iteration
        if total is None:
            total = weighted                        # the copy
        else:
            total = add(total, weighted)            # donates ``total``

The copy is taken in an earlier iteration than any call that receives both:
every path from it to the call rebinds ``weighted`` with new buffers, so
``total`` and ``weighted`` never share one.  The default ``jaxmem-fix``
donates ``total``; the fixed program prints the same and its old sums are
deleted.  When the copy can reach the call in the same iteration, or two
copies of one older value are passed together, the arguments do share a
buffer: left alone, and the donation, when forced, really fails."""

import pytest
from fix_runs import crashes_when_forced, fix, fix_and_rerun, load

jax = pytest.importorskip("jax")

ACCUMULATE = """
import jax
import jax.numpy as jnp


@jax.jit
def tree_weight(pytree, weight):
    return jax.tree_util.tree_map(lambda x: x * weight, pytree)


@jax.jit
def tree_add(left, right):
    return jax.tree_util.tree_map(jnp.add, left, right)


def tree_mean(pairs):
    total = None
    total_weight = 0.0
    for pytree, weight in pairs:
        weighted = tree_weight(pytree, weight)
        if total is None:
            total = weighted
        else:
            total = tree_add(total, weighted)
        del weighted
        total_weight += weight
    return jax.tree_util.tree_map(lambda x: x / total_weight, total)


if __name__ == "__main__":
    pairs = [({"a": jnp.arange(3.0) + i, "b": jnp.ones(2) * i}, 1.0 + i) for i in range(4)]
    mean = tree_mean(pairs)
    print(float(mean["a"].sum()), float(mean["b"].sum()))
    print(float(pairs[0][0]["a"].sum()))
"""

# The copy reaches the call in its own iteration: ``tree_add(weighted, weighted)``.
SAME_ITERATION = ACCUMULATE.replace(
    "        if total is None:\n            total = weighted\n        else:\n            total = tree_add(total, weighted)\n",
    "        if total is None:\n            total = weighted\n        total = tree_add(total, weighted)\n",
)

# Two copies of one older value passed together.
TWO_COPIES = ACCUMULATE.replace(
    "def tree_mean(pairs):\n    total = None\n",
    "def tree_mean(pairs):\n    total = None\n    other = None\n",
).replace(
    "            total = weighted\n        else:\n            total = tree_add(total, weighted)\n",
    "            total = weighted\n            other = weighted\n        else:\n            total = tree_add(total, other)\n",
)


def test_an_accumulator_copied_from_an_earlier_fresh_value_is_donated_and_runs(tmp_path):
    path = fix_and_rerun(tmp_path, ACCUMULATE)
    assert "donate_argnums=0" in path.read_text()

    left, right = {"a": jax.numpy.ones(3)}, {"a": jax.numpy.ones(3)}
    load(path)["tree_add"](left, right)
    assert left["a"].is_deleted() and not right["a"].is_deleted()


@pytest.mark.parametrize("program", [SAME_ITERATION, TWO_COPIES], ids=["same-iteration", "two-copies"])
def test_copies_that_reach_the_call_beside_their_source_are_left_alone_and_crash_when_forced(tmp_path, program):
    path, result = fix(tmp_path, program)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == program
    crashes_when_forced(tmp_path, program, "@jax.jit\ndef tree_add",
                        "@jax.jit(donate_argnums=0)\ndef tree_add", error="donate")

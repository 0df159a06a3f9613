"""A training loop in a test method that checks its state with the test case's
own assertions (``self.assertIsInstance(state, dict)``, the form of optax's,
flax's and brax's tests) keeps no reference through them: the default
``jaxmem-fix`` donates the state and the fixed test passes with its old arrays
deleted.  A test case that defines the assertion itself, and one deriving from a
class jaxmem cannot see, are left alone; the first really crashes when forced."""

import pytest
from fix_runs import crashes_when_forced, fix, fix_and_rerun, load

jax = pytest.importorskip("jax")
pytest.importorskip("absl.testing.absltest")

PROGRAM = """
import unittest

import jax
import jax.numpy as jnp
from absl.testing import absltest


@jax.jit
def step(state, batch):
    return jax.tree.map(lambda s: s + batch.mean(), state)


class StepTest(absltest.TestCase):

    def test_loop(self):
        state = {"w": jnp.ones((4, 4))}
        for _ in range(3):
            state = step(state, jnp.ones(4))
            self.assertIsInstance(state, dict)
            self.assertIn("w", state)
            self.assertLen(state, 1)
        print(float(state["w"].sum()))


if __name__ == "__main__":
    suite = unittest.TestLoader().loadTestsFromTestCase(StepTest)
    result = unittest.TextTestRunner().run(suite)
    assert result.wasSuccessful()
"""

# The class keeps what it checks: the kept state is read after the next step.
OWN_ASSERTION = PROGRAM.replace(
    "    def test_loop(self):\n",
    "    seen = []\n\n"
    "    def assertIsInstance(self, obj, cls):\n"
    "        self.seen.append(obj)\n"
    "        super().assertIsInstance(obj, cls)\n\n"
    "    def test_loop(self):\n",
).replace("        print(float(state[\"w\"].sum()))\n",
          "        print(float(state[\"w\"].sum()), float(self.seen[0][\"w\"].sum()))\n")

# A base class from somewhere jaxmem does not look may define the assertion.
UNSEEN_BASE = PROGRAM.replace("from absl.testing import absltest\n",
                              "from absl.testing import absltest\nfrom helpers import Base\n").replace(
    "class StepTest(absltest.TestCase):", "class StepTest(Base):")


def test_a_state_checked_by_test_case_assertions_is_donated_and_the_test_passes(tmp_path):
    path = fix_and_rerun(tmp_path, PROGRAM)
    assert "donate_argnums=0" in path.read_text()

    state = {"w": jax.numpy.ones((2, 2))}
    load(path)["step"](state, jax.numpy.ones(2))
    assert state["w"].is_deleted()


def test_a_test_case_defining_the_assertion_is_left_alone_and_crashes_when_forced(tmp_path):
    assert OWN_ASSERTION != PROGRAM and "self.seen.append(obj)" in OWN_ASSERTION
    path, result = fix(tmp_path, OWN_ASSERTION)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == OWN_ASSERTION
    crashes_when_forced(tmp_path, "import functools\n" + OWN_ASSERTION, "@jax.jit\ndef step",
                        "@functools.partial(jax.jit, donate_argnums=0)\ndef step")


def test_a_test_case_deriving_from_an_unseen_base_is_left_alone(tmp_path):
    path, result = fix(tmp_path, UNSEEN_BASE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_text() == UNSEEN_BASE


# jax's own test case (``from jax._src import test_util as jtu``, the form of
# tpu-inference's and jax-md's tests), checking the state with its array assertions.
JAX_TEST_CASE = PROGRAM.replace(
    "from absl.testing import absltest\n", "from absl.testing import absltest\nfrom jax._src import test_util as jtu\n"
).replace("class StepTest(absltest.TestCase):", "class StepTest(jtu.JaxTestCase):").replace(
    '            self.assertLen(state, 1)\n',
    '            self.assertLen(state, 1)\n'
    '            self.assertAllClose(state["w"], state["w"])\n'
    '            self.assertArraysEqual(state["w"], state["w"])\n')


def test_a_state_checked_by_jax_test_case_assertions_is_donated_and_the_test_passes(tmp_path):
    path = fix_and_rerun(tmp_path, JAX_TEST_CASE)
    assert "donate_argnums=0" in path.read_text()
    state = {"w": jax.numpy.ones((2, 2))}
    load(path)["step"](state, jax.numpy.ones(2))
    assert state["w"].is_deleted()

"""A state kept in an attribute (``self._state = self._sgd_step(self._state, batch)``) stays
medium: the object may be held elsewhere and other methods may hand the arrays out.  The
message names the class's other methods that use the attribute, the places to read before
donating it (acme's learners return ``self._state.params`` from ``get_variables``)."""

import textwrap

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

LEARNER = """
import jax
import jax.numpy as jnp


class Learner:
    def __init__(self):
        self._state = jnp.zeros(4)
        self._sgd_step = jax.jit(lambda s, b: s + b)

    def step(self, batch):
        self._state = self._sgd_step(self._state, batch)
"""


def _message(text: str) -> str:
    text = textwrap.dedent(text)
    facts = [facts_for_file("learner.py", text, ALL, project_hints({"learner.py": text}))]
    (found,) = [f for r in report(facts, ALL) for f in r.findings if f.code == "JXM001"]
    assert found.confidence == Confidence.MEDIUM
    return found.message


def test_the_other_methods_that_use_the_attribute_are_named_with_their_lines():
    message = _message(LEARNER + "\n    def get_variables(self):\n        return [self._state]\n\n"
                                 "    def save(me):\n        return me._state\n")
    assert message.endswith("`self._state` is owned outside this function (`__init__` (line 8), `get_variables` "
                            "(line 15) and `save` (line 18) use it too))"), message


def test_only_the_methods_own_first_parameter_counts_and_a_long_list_is_cut():
    others = "".join(f"\n    def use{i}(self):\n        return self._state\n" for i in range(5))
    static = "\n    @staticmethod\n    def helper(self):\n        return self._state\n"
    unrelated = "\n    def other(self, learner):\n        return learner._state\n"
    message = _message(LEARNER + others + static + unrelated)
    assert "(`__init__` (line 8), `use0` (line 15), `use1` (line 18) and 3 more use it too)" in message, message


def test_without_other_uses_the_reason_stays_as_it_was():
    message = _message(LEARNER.replace("self._state = jnp.zeros(4)", "pass"))
    assert message.endswith("`self._state` is owned outside this function)"), message

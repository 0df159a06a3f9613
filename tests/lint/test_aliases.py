"""Which values hold the donated state's arrays (aliases), and which do not.

The runnable proof that each alias form crashes when the state is donated is
``tests/codemod/test_fix_alias_runs.py``; here, what the analysis concludes.
"""

import textwrap

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

HEAD = """
import jax
import jax.numpy as jnp


@jax.jit
def step(s):
    return jax.tree_util.tree_map(lambda v: v * 2, s)


def main(x):
    s = {"a": jnp.arange(3.0) * 1, "b": jnp.ones(3) * 2}
"""


def _findings(body: str):
    text = HEAD + textwrap.indent(textwrap.dedent(body), "    ")
    facts = [facts_for_file("m.py", text, ALL, project_hints({"m.py": text}))]
    (result,) = report(facts, ALL)
    return result.findings


def _state_proposal(body: str) -> str | None:
    found = [f for f in _findings(body) if f.code == "JXM001" and f.parameter_name == "s"]
    return found[0].confidence.value if found else None


@pytest.mark.parametrize("binding", [
    'j = s["a"][:]', 'j = s["a"].reshape(3)', "j = s.get('a')", "j = s.copy()", "j = list(s.values())",
    "j = [v for v in s.values()]", "j = s | {}", "a = s\nj = a", "j = None\nfor v in s.values():\n    j = v",
    "j = x.wrap(s).unwrap()", "j = s.get_part()", "j = jax.lax.fori_loop(0, 0, lambda i, c: c, s)",
])
def test_a_value_that_may_hold_the_state_blocks_its_donation(binding):
    assert _state_proposal(binding + "\ns = step(s)\nprint(j)\n") != "high"


@pytest.mark.parametrize("binding", [
    'j = s["a"].sum()', 'j = s["a"] * 1', "j = {k: v * 2 for k, v in s.items()}", 'j = s["a"].at[0].set(1.0)',
    'j = s["a"]\nj = j * 2',  # rebound to a new array before the step: no longer an alias
])
def test_new_arrays_do_not_block_it(binding):
    assert _state_proposal(binding + "\ns = step(s)\nprint(j)\n") == "high"


@pytest.mark.parametrize("setup,read", [
    ("ps = [w]\ns = ps", "w"),  # two names back
    ("ps = [w]\ns = ps + []", "w"),  # through a new list of the same arrays
    ("fast, slow = w, w\ns = [fast]", "slow"),  # a sibling name
    ("a = b = w\ns = [a]", "b"),
    ("ps = [w]\nkept = ps\ns = ps", "kept"),  # another name of its source
])
def test_a_name_still_holding_the_arrays_it_is_made_of_blocks_its_donation(setup, read):
    assert _state_proposal(f"w = x * 0.5\n{setup}\ns = step(s)\nprint({read})\n") == "medium"
    assert _state_proposal(f"w = x * 0.5\n{setup}\ns = step(s)\nprint(1)\n") == "high"


def test_the_arguments_of_a_method_are_not_its_result():
    # ``v = mixed.reshape(n, d)``: ``n`` and ``d`` are shape ints, not parts of ``v``.
    body = """
    n, d = 3, 1
    v = (x * 1).reshape(n, d)
    out = donating(v)
    print(n, d, out)
    """
    source = HEAD.replace("@jax.jit\ndef step", "@functools.partial(jax.jit, donate_argnums=0)\ndef donating")
    text = "import functools\n" + source + textwrap.indent(textwrap.dedent(body), "    ")
    facts = [facts_for_file("m.py", text, ALL, project_hints({"m.py": text}))]
    (result,) = report(facts, ALL)
    assert not [f for f in result.findings if f.code == "JXM101"], [f.message for f in result.findings]


DONATING = HEAD.replace("@jax.jit\ndef step", "@functools.partial(jax.jit, donate_argnums=0)\ndef step")


@pytest.mark.parametrize("binding,sure", [
    ("j = s", True), ('j = s["a"]', True), ("j = [s]", True), ("j = None\nfor j in s.values():\n    pass", True),
    ('j = s["a"].reshape(3)', False), ("j = s.copy()", False), ("j = s.get_part()", False),
])
def test_a_read_after_donation_through_an_alias_says_whether_it_surely_crashes(binding, sure):
    text = "import functools\n" + DONATING + textwrap.indent(binding + "\ns = step(s)\nprint(j)\n", "    ")
    facts = [facts_for_file("m.py", text, ALL, project_hints({"m.py": text}))]
    (result,) = report(facts, ALL)
    (finding,) = [f for f in result.findings if f.code == "JXM101"]
    assert ("refers to the value of `s`" in finding.message) is sure, finding.message
    assert ("may share its arrays with `s`" in finding.message) is not sure, finding.message


def test_a_state_made_from_itself_through_a_holding_call_is_analysed():
    # ``s = s.replace(m=s.m.empty())`` reads ``s`` again: following its old value
    # through the holding call must end (it once recursed without bound).
    body = "s = x.make()\nfor _ in range(3):\n    s = s.replace(m=s.m.empty())\n    s = step(s)\n"
    assert _state_proposal(body) == "medium"


def test_a_long_concatenation_is_followed_without_recursion():
    import libcst as cst

    from jaxmem.lint.values.flow import joined_operands

    chain = cst.List([cst.Element(cst.Name("w"))])
    for _ in range(5000):  # five times the default recursion limit
        chain = cst.BinaryOperation(chain, cst.Add(), cst.List([cst.Element(cst.Name("w"))]))
    operands = joined_operands(cst.BinaryOperation(chain, cst.Add(), cst.SimpleString('"s"')))
    assert len(operands) == 5001 and all(isinstance(operand, cst.List) for operand in operands)

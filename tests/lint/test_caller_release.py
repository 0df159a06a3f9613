"""A parameter of a nested def is not held by its caller when the def is only
ever called by name in its parent and every call passes a value that is dead
after it and provably its own (brax's ``training_epoch_with_timing``)."""

import textwrap

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

HEAD = """
import jax
import jax.numpy as jnp

def step(state, batch):
    return state + batch

"""

# ``{call}`` is the parent's code after the helper's definition; the helper
# calls the jitted ``epoch`` on its parameter and returns the result.
PARENT = """
def train(batches, init=None):
    epoch = jax.jit(step)

    def with_timing(state, batch):
        state = epoch(state, batch)
        jax.block_until_ready(state)
        return state

{call}
"""


def _findings(source: str):
    text = textwrap.dedent(source)
    facts = [facts_for_file("m.py", text, ALL, project_hints({"m.py": text}))]
    (result,) = report(facts, ALL)
    return [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "state"]


def _confidence(call: str) -> str | None:
    found = _findings(HEAD + PARENT.format(call=textwrap.indent(textwrap.dedent(call), "    ")))
    return found[0].confidence.value if found else None


VALID = [  # the caller provably lets go: high
    pytest.param("""
        state = jnp.zeros((4,))
        for b in batches:
            state = with_timing(state, b)
        return state
        """, id="called-in-loop-rebound"),
    pytest.param("""
        state = jnp.zeros((4,))
        state = with_timing(state, 1.0)
        other = jnp.ones((4,))
        other = with_timing(other, 2.0)
        return state, other
        """, id="called-twice-both-dead"),
    pytest.param("""
        out = with_timing(jnp.zeros((4,)), 1.0)
        return out
        """, id="fresh-temporary"),
    pytest.param("""
        state = {"w": jnp.zeros((4,)), "b": jnp.ones((4,))}
        for b in batches:
            state = with_timing(state, b)
            print(b)
        return state
        """, id="other-arguments-read-after"),
    pytest.param("""
        state = jnp.zeros((4,))
        state = with_timing(*(), batch=1.0, state=state)
        return state
        """, id="keywords-after-a-star"),
]

INVALID = [  # something may still hold it: medium
    pytest.param("""
        state = jnp.zeros((4,))
        new = with_timing(state, 1.0)
        return new, state
        """, id="caller-reads-it-after"),
    pytest.param("""
        a = jnp.zeros((4,))
        a = with_timing(a, 1.0)
        b = jnp.zeros((4,))
        c = with_timing(b, 1.0)
        return a, b, c
        """, id="second-call-reads-it-after"),
    pytest.param("""
        state = jnp.zeros((4,))
        state = with_timing(state, 1.0)
        return with_timing
        """, id="helper-returned"),
    pytest.param("""
        state = jnp.zeros((4,))
        state = with_timing(state, 1.0)
        run_later(with_timing)
        return state
        """, id="helper-passed-as-callback"),
    pytest.param("""
        state = jnp.zeros((4,))
        state = with_timing(state, 1.0)
        table = {"step": with_timing}
        return state, table
        """, id="helper-stored"),
    pytest.param("""
        state = jnp.zeros((4,))
        fn = lambda s: with_timing(s, 1.0)
        state = fn(state)
        return state
        """, id="helper-called-from-a-lambda"),
    pytest.param("""
        for b in batches:
            init = with_timing(init, b)
        return init
        """, id="parent-parameter-passed"),
    pytest.param("""
        state = holder.get_state()
        state = with_timing(state, 1.0)
        return state
        """, id="value-not-proved-own"),
    pytest.param("""
        def inner_loop(n):
            s = jnp.zeros((4,))
            for _ in range(n):
                s = with_timing(s, 1.0)
            return s
        return inner_loop(3)
        """, id="called-from-another-nested-def"),
    pytest.param("""
        state = jnp.zeros((4,))
        kept = [state]
        state = with_timing(state, 1.0)
        return state, kept
        """, id="value-kept-in-a-container"),
    pytest.param("""
        state = jnp.zeros((4,))
        new = with_timing(*(), batch=1.0, state=state)
        return new, state
        """, id="keyword-after-star-read-after"),
    pytest.param("""
        state = jnp.zeros((4,))
        with_timing = jax.jit(with_timing)
        state = with_timing(state, 1.0)
        return state
        """, id="helper-rebound"),
]


@pytest.mark.parametrize("call", VALID)
def test_caller_lets_go_is_high(call):
    assert _confidence(call) == "high"


@pytest.mark.parametrize("call", INVALID)
def test_caller_may_hold_stays_medium(call):
    assert _confidence(call) == "medium"


def test_evidence_says_why_the_caller_does_not_hold_it():
    (finding,) = _findings(HEAD + PARENT.format(call="    state = jnp.zeros((4,))\n    state = with_timing(state, 1)\n"
                                                     "    return state\n"))
    text = " ".join(e.message for e in finding.evidence)
    assert "`with_timing` is called only in `train` (line 18)" in text
    assert "passes for `state` a value dead after it" in text


OTHER_SHAPES = [
    pytest.param("""
        def train():
            epoch = jax.jit(step)
            def helper(state, batch):
                state = GLOBAL_STATE
                state = epoch(state, batch)
                return state
            s = jnp.zeros((4,))
            s = helper(s, 1.0)
            return s
        """, "medium", id="parameter-rebound-to-a-global-before-the-call"),
    pytest.param("""
        def train():
            epoch = jax.jit(step)
            s = jnp.zeros((4,))
            def helper(state, batch):
                state = epoch(state, batch)
                print(s)
                return state
            s = helper(s, 1.0)
            return s
        """, "medium", id="helper-reads-the-passed-variable-as-a-closure"),
    pytest.param("""
        def train():
            epoch = jax.jit(step)
            def helper(state, batch):
                state = epoch(state, batch)
                yield state
            s = jnp.zeros((4,))
            for s in helper(s, 1.0):
                pass
            return s
        """, "medium", id="generator-helper"),
    pytest.param("""
        def train():
            epoch = jax.jit(step)
            def helper(state, batch, other):
                state = epoch(state, batch)
                return state + other
            s = jnp.zeros((4,))
            s = helper(s, 1.0, s)
            return s
        """, "medium", id="passed-twice"),
    pytest.param("""
        def train():
            epoch = jax.jit(step)
            def helper(state, batch):
                state = epoch(state, batch)
                return state
            def outer(t):
                t = helper(t, 1.0)
                return t
            s = jnp.zeros((4,))
            s = outer(s)
            return s
        """, "medium", id="called-from-a-sibling-scope"),
    pytest.param("""
        def train():
            epoch = jax.jit(step)
            def outer(t):
                def helper(state, batch):
                    state = epoch(state, batch)
                    return state
                t = helper(t, 1.0)
                return t
            s = jnp.zeros((4,))
            s = outer(s)
            return s
        """, "high", id="two-levels-of-nesting"),
    pytest.param("""
        def train(s):
            epoch = jax.jit(step)
            def outer(t):
                def helper(state, batch):
                    state = epoch(state, batch)
                    return state
                t = helper(t, 1.0)
                return t
            s = outer(s)
            return s
        """, "medium", id="two-levels-ending-at-the-outermost-parameter"),
    pytest.param("""
        def train(default):
            epoch = jax.jit(step)
            def helper(batch, state=default):
                state = epoch(state, batch)
                return state
            return helper(1.0)
        """, "medium", id="default-used"),
]


@pytest.mark.parametrize("source, expected", OTHER_SHAPES)
def test_other_shapes(source, expected):
    found = _findings(HEAD + textwrap.dedent(source))
    assert found and found[0].confidence.value == expected

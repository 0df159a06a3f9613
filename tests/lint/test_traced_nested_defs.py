"""A def nested in a traced function runs traced, unless its name escapes the parent.

Inside a jitted function every call is staged: a donating jit called there,
directly or through a nested helper (called by name, or handed to
``jax.grad``/``jax.vmap``/``jax.lax.scan``), sees tracers and deletes nothing,
so jaxmem proposes no donation there.  A helper handed to
``jax.debug.callback`` runs later on concrete arrays, where a donation
deletes them: it is analysed as eager code.  Each claim is run on jax here.
"""

import textwrap

import jax
import jax.numpy as jnp
import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

_PROGRAM = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    @jax.jit
    def inner(state, x):
        return state * 2.0 + x


    @jax.jit
    def outer(state, x):
        def helper(s):
            s = inner(s, x)
            return s
        {use}


    def main():
        state = jnp.ones(3)
        state = outer(state, jnp.ones(3))
        return state
    """
)
_USES = {
    "called": "return helper(state)",
    "grad": "def helper_sum(s):\n        return helper(s).sum()\n"
            "    return jax.grad(lambda s: helper(s).sum())(state) + jax.grad(helper_sum)(state)",
    "vmap": "return jax.vmap(helper)(state[None])[0]",
    "scan": "return jax.lax.scan(lambda c, _: (helper(c), None), state, None, length=2)[0]",
}


def _inner_proposed(source: str) -> bool:
    compile(source, "m.py", "exec")
    hints = project_hints({"m.py": source})
    facts = facts_for_file("m.py", source, ALL, hints)
    return any(f.code == "JXM001" and "`inner`" in f.message for f in report([facts], ALL)[0].findings)


@pytest.mark.parametrize("use", sorted(_USES))
def test_no_donation_proposed_in_a_helper_of_a_jitted_function(use):
    source = _PROGRAM.format(use=_USES[use])
    namespace: dict = {}
    exec(compile(source, "m.py", "exec"), namespace)  # the program runs as written
    assert namespace["main"]().shape == (3,)
    assert not _inner_proposed(source)


def test_a_helper_handed_to_a_host_callback_is_eager():
    source = _PROGRAM.format(use="jax.debug.callback(helper, x)\n    return state + 1.0")
    assert _inner_proposed(source)


@pytest.mark.parametrize("use", ["called", "vmap", "scan"])
def test_a_donating_jit_in_a_traced_helper_deletes_nothing(use):
    step = jax.jit(lambda s: s * 2.0, donate_argnums=0)
    outside = jnp.ones(3)

    def helper(s):
        return step(s) + 0.0 * step(outside).sum()

    runs = {
        "called": lambda s: helper(s),
        "vmap": lambda s: jax.vmap(helper)(s[None])[0],
        "scan": lambda s: jax.lax.scan(lambda c, _: (helper(c), None), s, None, length=2)[0],
    }
    state = jnp.ones(3)
    jax.jit(runs[use])(state)
    assert not state.is_deleted() and not outside.is_deleted()


def test_a_donating_jit_in_a_host_callback_deletes_its_argument():
    step = jax.jit(lambda s: s * 2.0, donate_argnums=0)
    outside = jnp.ones(3)

    def helper(x):
        step(outside)

    @jax.jit
    def outer(x):
        jax.debug.callback(helper, x)
        return x + 1.0

    jax.block_until_ready(outer(jnp.ones(3)))
    jax.effects_barrier()
    assert outside.is_deleted()

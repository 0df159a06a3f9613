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


# sbx's SAC: a jitted classmethod's loop body hands a plain classmethod to lax.cond,
# which calls a jitted staticmethod; only the outer jit's arguments can be donated.
_ALGO = textwrap.dedent(
    """\
    from functools import partial

    import jax
    import jax.numpy as jnp


    class Algo:
        @staticmethod
        @jax.jit
        def update_actor(actor_state, x):
            return actor_state * 0.5 + x

        @classmethod
        def update_both(cls, actor_state, x):
            actor_state = cls.update_actor(actor_state, x)
            return actor_state

        @classmethod
        @partial(jax.jit, static_argnames=["cls"])
        def train(cls, actor_state, xs):
            def one_update(i, carry):
                return jax.lax.cond(i % 2 == 0, cls.update_both, lambda c, x: c, carry, xs[i])
            return jax.lax.fori_loop(0, xs.shape[0], one_update, actor_state)
    """
)
_MAIN = "\n\ndef main():\n    state = jnp.ones(3)\n    state = Algo.train(state, jnp.ones((4, 3)))\n    return state\n"


def _project_proposes(texts: dict[str, str]) -> bool:
    hints = project_hints(texts, ALL)
    reports = report([facts_for_file(path, text, ALL, hints) for path, text in texts.items()], ALL)
    return any(f.code == "JXM001" and "update_actor" in f.message for r in reports for f in r.findings)


def test_a_method_called_only_from_traced_code_of_its_class_is_traced():
    source = _ALGO + _MAIN
    namespace: dict = {}
    exec(compile(source, "algo.py", "exec"), namespace)
    assert namespace["main"]().shape == (3,)
    assert not _project_proposes({"pkg/algo.py": source})
    # Another file's class with a method of that name, used through its own `cls`, is not a caller.
    other = ("class Other:\n    @classmethod\n    def update_both(cls, s, x):\n        return s\n\n"
             "    @classmethod\n    def run(cls, s):\n        return cls.update_both(s, 1)\n")
    assert not _project_proposes({"pkg/algo.py": source, "pkg/other.py": other})


@pytest.mark.parametrize("caller", ["same-file", "other-file", "subclass"])
def test_a_method_also_called_eagerly_is_not(caller):
    source = _ALGO + _MAIN
    texts = {"pkg/algo.py": source}
    if caller == "same-file":
        texts["pkg/algo.py"] = source + "\n\ndef eager(s):\n    s = Algo.update_both(s, jnp.ones(3))\n    return s\n"
    elif caller == "other-file":
        texts["pkg/run.py"] = ("import jax.numpy as jnp\n\nfrom pkg.algo import Algo\n\n\n"
                               "def eager(algo, s):\n    s = algo.update_both(s, jnp.ones(3))\n    return s\n")
    else:  # a subclass that does not define it calls the inherited method eagerly
        texts["pkg/sub.py"] = ("from pkg.algo import Algo\n\n\nclass Sub(Algo):\n"
                               "    def step(self, s, x):\n        s = self.update_both(s, x)\n        return s\n")
    assert _project_proposes(texts)


def test_a_donating_jit_in_a_method_called_from_a_jitted_loop_deletes_nothing():
    namespace: dict = {}
    exec(compile(_ALGO.replace("@jax.jit\n    def update_actor", "@partial(jax.jit, donate_argnums=0)\n"
                               "    def update_actor"), "algo.py", "exec"), namespace)
    algo = namespace["Algo"]
    state = jnp.ones(3)
    assert algo.train(state, jnp.ones((4, 3))).shape == (3,)
    assert not state.is_deleted()
    eager = jnp.ones(3)
    algo.update_both(eager, jnp.ones(3))  # called eagerly, the same method does donate
    assert eager.is_deleted()


# jax-md's tests: every test method defines its own `step_fn` and hands it to
# `lax.fori_loop`; the jit called inside runs traced in each.  The name is local to
# its test, so the file-wide count of its mentions does not decide.
_TESTS = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    from jax import lax


    def apply(state):
        return state * 2.0


    def test_one():
        apply_fn = jax.jit(apply)
        state = jnp.ones(3)

        def step_fn(i, state_and_energy):
            state, energy = state_and_energy
            fresh = state + 1.0
            state = apply_fn(fresh)
            return state, energy.at[i].set(state.sum())

        state, energies = lax.fori_loop(0, 4, step_fn, (state, jnp.zeros(4)))
        return state


    def test_two():
        apply_fn = jax.jit(apply)
        state = jnp.ones(3)

        def step_fn(i, carry):
            fresh = carry + 1.0
            return apply_fn(fresh)

        {second}
    """
)
_SECOND = {
    "staged": "return lax.fori_loop(0, 4, step_fn, state)",
    "called eagerly too": "state = step_fn(0, state)\n    return lax.fori_loop(0, 4, step_fn, state)",
    "escapes": "loops = [step_fn]\n    return lax.fori_loop(0, 4, loops[0], state)",
}


def _apply_fn_lines(source: str) -> list[int]:
    compile(source, "m.py", "exec")
    hints = project_hints({"m.py": source})
    facts = facts_for_file("m.py", source, ALL, hints)
    return sorted(f.span.line for f in report([facts], ALL)[0].findings if f.code in ("JXM001", "JXM002") and "`apply_fn`" in f.message)


def test_a_nested_def_handed_only_to_a_staging_loop_in_its_parent_is_traced():
    source = _TESTS.format(second=_SECOND["staged"])
    namespace: dict = {}
    exec(compile(source, "m.py", "exec"), namespace)
    assert namespace["test_one"]().shape == namespace["test_two"]().shape == (3,)
    assert _apply_fn_lines(source) == []


@pytest.mark.parametrize("second", ["called eagerly too", "escapes"])
def test_a_nested_def_used_otherwise_in_its_parent_is_not(second):
    source = _TESTS.format(second=_SECOND[second])
    namespace: dict = {}
    exec(compile(source, "m.py", "exec"), namespace)
    assert namespace["test_two"]().shape == (3,)
    # test_one's step_fn is still traced: only test_two's jit is proposed
    assert _apply_fn_lines(source) == [source.splitlines().index("def test_two():") + 2]


def test_a_donating_jit_in_a_fori_loop_body_deletes_nothing():
    apply_fn = jax.jit(lambda s: s * 2.0, donate_argnums=0)
    state = jnp.ones(3)

    def step_fn(i, carry):
        return apply_fn(carry)

    out = jax.lax.fori_loop(0, 4, step_fn, state)
    assert not state.is_deleted() and out.shape == (3,)


_SHARDED = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, PartitionSpec as PS


    def apply(state):
        return state * 2.0


    def attend(state):
        apply_fn = jax.jit(apply)
        mesh = Mesh(np.array(jax.devices()[:1]), ("x",))

        def wrapper(s):
            fresh = s + 1.0
            return apply_fn(fresh)

        {use}
    """
)


def test_a_nested_def_handed_to_shard_map_in_its_parent_is_traced():
    source = _SHARDED.format(use="return jax.jit(jax.shard_map(wrapper, mesh=mesh, in_specs=PS(), out_specs=PS()))(state)")
    namespace: dict = {}
    exec(compile(source, "m.py", "exec"), namespace)
    assert namespace["attend"](jnp.ones(3)).shape == (3,)
    assert _apply_fn_lines(source) == []
    called_too = source.replace("return jax.jit(", "wrapper(state)\n    return jax.jit(")
    assert _apply_fn_lines(called_too) == [source.splitlines().index("def attend(state):") + 2]

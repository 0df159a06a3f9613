"""Jitted callables are found in every decorator and wrapper form, through
any import alias, with their donation normalised to parameter positions."""

import textwrap

import pytest

from jaxmem.lint.callables.definitions import parse_definitions

HEADER = """
import functools
import functools as ft
from functools import partial
import jax
import jax as j
from jax import jit, pmap
from jax.experimental.pjit import pjit
import equinox as eqx
from flax import nnx
"""


def _defs(body: str, **kwargs):
    source = HEADER + textwrap.dedent(body)
    _, sites = parse_definitions(source, **kwargs)
    return [site.definition for site in sites]


FORMS = [
    pytest.param("@jax.jit\ndef f(x, y): ...", "f", "jax.jit", "decorator", set(), id="bare-decorator"),
    pytest.param("@jit\ndef f(x, y): ...", "f", "jax.jit", "decorator", set(), id="from-import"),
    pytest.param("@j.jit(donate_argnums=1)\ndef f(x, y): ...", "f", "jax.jit", "decorator_call", {1}, id="alias-call"),
    pytest.param("@partial(jax.jit, donate_argnums=(0,))\ndef f(x, y): ...", "f", "jax.jit", "decorator_partial", {0},
                 id="partial"),
    pytest.param("@ft.partial(jax.pmap, axis_name='b', donate_argnums=(0, 1))\ndef f(x, y): ...", "f", "jax.pmap",
                 "decorator_partial", {0, 1}, id="functools-alias-pmap"),
    pytest.param("@jax.pmap\ndef f(x, y): ...", "f", "jax.pmap", "decorator", set(), id="bare-pmap"),
    pytest.param("def g(x, y): ...\nf = jax.jit(g, donate_argnums=0)", "f", "jax.jit", "call", {0}, id="wrap-call"),
    pytest.param("def g(x, y): ...\np_f = jax.pmap(g, 'batch', donate_argnums=(1,))", "p_f", "jax.pmap", "call", {1},
                 id="pmap-call"),
    pytest.param("def g(x, y): ...\nf = pjit(g, donate_argnums=(0,))", "f", "pjit", "call", {0}, id="pjit"),
    pytest.param("@nnx.jit(donate_argnums=0)\ndef f(model, x): ...", "f", "nnx.jit", "decorator_call", {0}, id="nnx"),
    pytest.param("@eqx.filter_jit(donate='all')\ndef f(model, x): ...", "f", "eqx.filter_jit", "decorator_call", {0, 1},
                 id="eqx-all"),
    pytest.param("@eqx.filter_jit(donate='all-except-first')\ndef f(model, x): ...", "f", "eqx.filter_jit",
                 "decorator_call", {1}, id="eqx-except-first"),
    pytest.param("def g(m, x, y): ...\nf = jax.jit(functools.partial(g, 3), donate_argnums=1)", "f", "jax.jit", "call",
                 {1}, id="partial-bound-arg"),
    pytest.param("f = jax.jit(lambda a, b: a, donate_argnums=(0,))", "f", "jax.jit", "call", {0}, id="lambda"),
    pytest.param("DONATE = (0, 1)\n@partial(jax.jit, donate_argnums=DONATE)\ndef f(x, y): ...", "f", "jax.jit",
                 "decorator_partial", {0, 1}, id="constant-propagated"),
    pytest.param("def make():\n    def g(x, y): ...\n    return jax.jit(g, donate_argnums=0)\nf = make()", "f",
                 "jax.jit", "call", {0}, id="factory"),
    pytest.param("def g(x, y): ...\nf = cache or jax.jit(g)", "f", "jax.jit", "call", set(), id="or-expression"),
    pytest.param("def g(x, y): ...\nf = jax.jit(g, donate_argnums=1).lower(a, b).compile()", "f", "jax.jit", "call",
                 {1}, id="compiled-ahead-of-time"),
]


@pytest.mark.parametrize("body,function,transform,form,indices", FORMS)
def test_definition_forms(body, function, transform, form, indices):
    (d,) = _defs(body)
    assert (d.function, d.transform, d.form, set(d.spec.indices)) == (function, transform, form, indices)


def test_methods_count_self_for_decorators_but_not_for_bound_wraps():
    defs = _defs(
        """
        class Trainer:
            def __init__(self):
                self._step = jax.jit(self.step, donate_argnums=(0,))
                self.fns = {"eval": jax.jit(self.step)}

            def step(self, state, batch): ...

            @partial(jax.jit, static_argnums=0, donate_argnums=1)
            def fast(self, state, batch): ...

            @functools.cached_property
            def lazy(self):
                return jax.jit(self.step, donate_argnums=1)
        """
    )
    by_name = {d.function: d for d in defs}
    assert by_name["self._step"].signature.name_at(0) == "state"
    assert by_name["self._step"].shift == 0
    assert by_name["self.fast"].shift == 1 and by_name["self.fast"].signature.name_at(1) == "state"
    assert by_name["self.fast"].spec.names == {"state"}
    assert 'self.fns["eval"]' in by_name
    assert by_name["self.lazy"].spec.names == {"batch"}


def test_argnames_are_inferred_from_argnums_and_back():
    (d,) = _defs("@partial(jax.jit, donate_argnums=0)\ndef f(x, y): ...")
    assert d.spec.names == {"x"}
    (d,) = _defs("@partial(jax.jit, donate_argnames='y')\ndef f(x, y): ...")
    assert d.spec.indices == {1}


def test_both_given_switches_inference_off():
    (d,) = _defs("@partial(jax.jit, donate_argnums=0, donate_argnames='y')\ndef f(x, y): ...")
    assert (d.spec.indices, d.spec.names) == ({0}, {"y"})


def test_pmap_never_donates_keywords():
    (d,) = _defs("@partial(jax.pmap, donate_argnums=0)\ndef f(x, y): ...")
    assert d.spec.names == frozenset() and not d.donates_keywords


def test_unknown_spec_is_not_guessed():
    (d,) = _defs("@partial(jax.jit, donate_argnums=() if is_eval else (0,))\ndef f(x, y): ...")
    assert not d.spec.known and "not a constant" in d.spec.unknown_reason


def test_project_wrapper_forwarding_donate_argnums():
    (d,) = _defs(
        """
        def my_jit(fn, donate_argnums=(), **kwargs):
            return jax.jit(fn, donate_argnums=donate_argnums, **kwargs)

        def g(x, y): ...
        f = my_jit(g, donate_argnums=1)
        """
    )
    assert (d.function, d.transform, set(d.spec.indices)) == ("f", "my_jit", {1})


def test_extra_wrapper_from_config():
    source = "from mylib import fast_jit\ndef g(x, y): ...\nf = fast_jit(g, donate_argnums=0)\n"
    assert parse_definitions(source)[1] == []
    _, sites = parse_definitions(source, extra_wrappers=("mylib.fast_jit",))
    assert [s.definition.function for s in sites] == ["f"]


def test_non_jax_jit_is_ignored():
    assert _defs("import numba\n@numba.jit\ndef f(x): ...") == []


LIBRARY_OBJECTS = """
import flashbax as fbx
import optax

tx = optax.adam(1e-3)
opt_init, opt_update = optax.adam(1e-3)
buffer = fbx.make_flat_buffer(max_length=8, min_length=1, sample_batch_size=2)
"""


@pytest.mark.parametrize("body, params", [
    pytest.param("update_fn = jax.jit(tx.update)", ["updates", "state", "params", "extra_args"], id="optax-method"),
    pytest.param("update_fn = jax.jit(opt_update)", ["updates", "state", "params", "extra_args"], id="optax-unpacked"),
    pytest.param("add = jax.jit(buffer.add)", ["state", "batch"], id="flashbax-add"),
    pytest.param("def run():\n    with ctx():\n        b = fbx.make_item_buffer(max_length=8, min_length=1,"
                 " sample_batch_size=2)\n        add = jax.jit(b.add)", ["state", "batch"], id="bound-in-a-with"),
])
def test_a_jit_of_a_library_objects_function_gets_its_contract(body, params):
    (d,) = _defs(LIBRARY_OBJECTS + body)
    assert [p.name for p in d.signature.params] == params and d.outputs is not None


@pytest.mark.parametrize("body", [
    pytest.param("def run(buffer):\n    add = jax.jit(buffer.add)", id="a-parameter-shadows-it"),
    pytest.param("def run(opt_update):\n    f = jax.jit(opt_update)", id="a-parameter-shadows-the-unpacked"),
    pytest.param("def run(tx):\n    f = jax.jit(tx.update)", id="a-parameter-shadows-the-transform"),
    pytest.param("def run(items):\n    for buffer in items:\n        add = jax.jit(buffer.add)", id="a-loop-variable"),
    pytest.param("if flag:\n    buffer = other()\nadd = jax.jit(buffer.add)", id="rebound-in-an-if"),
    pytest.param("def swap():\n    global tx\n    tx = other()\nf = jax.jit(tx.update)", id="rebound-through-global"),
    pytest.param("def run():\n    with ctx() as buffer:\n        add = jax.jit(buffer.add)", id="with-as"),
    pytest.param("opt_update = other\nf = jax.jit(opt_update)", id="unpacked-then-rebound"),
])
def test_a_name_that_may_hold_another_object_gets_no_contract(body):
    (d,) = _defs(LIBRARY_OBJECTS + body)
    assert d.signature is None and d.outputs is None


def test_a_jit_compiled_ahead_of_time_with_static_arguments_is_not_a_definition():
    # the compiled function no longer takes the static arguments: positions would shift
    assert _defs("def g(n, x): ...\nf = jax.jit(g, static_argnums=0).lower(3, a).compile()") == []
    assert _defs("def g(x): ...\nf = jax.jit(g).lower(a)") == []  # lowered, not compiled: not callable


def test_factories_name_the_jit_node_they_return_for_each_binding():
    defs = _defs(
        """
        def make():
            @jax.jit
            def step(x, y): ...
            return step

        def make_wrapped():
            def g(x, y): ...
            return jax.jit(g, donate_argnums=1)

        f = make()
        h = make_wrapped()
        k = make_wrapped()
        steps = [make()]
        """
    )
    by_name = {d.function: d for d in defs}
    assert (by_name["f"].line, by_name["f"].col) == (by_name["step"].line, by_name["step"].col)  # one node
    assert by_name["f"].made_by == "make" and by_name["f"].made_elsewhere  # `[make()]` makes it too
    assert by_name["h"].made_by == by_name["k"].made_by == "make_wrapped"
    assert not by_name["h"].made_elsewhere and by_name["h"].spec.indices == {1}
    assert by_name["step"].made_by is None


def test_a_method_factory_and_a_property_name_their_jit():
    defs = _defs(
        """
        class Trainer:
            def __init__(self):
                self.train_step = self._make_train_step()
                self._compiled = jax.jit(self._sample, donate_argnums=1)

            def _step(self, state, batch): ...

            def _sample(self, params, state): ...

            def _make_train_step(self):
                return jax.jit(self._step, donate_argnums=(0,))

            @property
            def sample_fn(self):
                if self.on:
                    return self._compiled
                return self._sample

            @functools.cached_property
            def lazy(self):
                @jax.jit
                def inner(model, batch): ...
                return inner
        """
    )
    by_name = {d.function: d for d in defs}
    train = by_name["self.train_step"]
    assert train.made_by == "self._make_train_step" and train.signature.name_at(0) == "state"
    assert train.spec.names == {"state"} and train.shift == 0
    alias, original = by_name["self.sample_fn"], by_name["self._compiled"]
    assert (alias.line, alias.col, alias.spec) == (original.line, original.col, original.spec)
    assert by_name["self.lazy"].signature.name_at(0) == "model"
    assert (by_name["self.lazy"].line, by_name["self.lazy"].col) == (by_name["inner"].line, by_name["inner"].col)


def test_a_decorator_above_the_jit_is_named():
    defs = _defs(
        """
        @logged
        @jax.jit
        def f(x, y): ...

        @staticmethod
        @partial(jax.jit, donate_argnums=0)
        def g(x, y): ...

        @jax.jit
        @jax.named_call
        def h(x, y): ...
        """
    )
    assert {d.function: d.wrapped_by for d in defs} == {"f": "logged", "g": None, "h": None}

"""The blackjax entries of ``lint/values/array_api.py`` and
``lint/callables/library_callables.py`` checked under real blackjax 1.7.1:
each algorithm's ``init`` holds the position's arrays as they are and makes
the rest new, and its jitted ``step`` returns a state of the input state's
structure that takes the donated state's buffers."""

import warnings

import libcst as cst
import pytest

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.library_callables import library_method, makes_blackjax_algorithm
from jaxmem.lint.values import array_api
from jaxmem.lint.values.array_api import HOLDS, call_effect
from jaxmem.lint.values.usefulness import PRESERVED

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
blackjax = pytest.importorskip("blackjax")


_CENTER = jnp.full(3, 0.5)  # closed over by the log density: the state must not hold it


def _logdensity(x):
    return -0.5 * jnp.sum(x["a"] ** 2) - 0.5 * jnp.sum((x["b"] - _CENTER) ** 2)


_IMM = jnp.ones(5)
_PROPOSAL = "blackjax.mcmc.random_walk.normal(0.1 * jnp.ones(5))"
# Each algorithm of BLACKJAX_ALGORITHMS: its arguments after the log density, and
# whether its init also takes a PRNG key.
_ALGORITHMS = {
    "hmc": ("0.1, _IMM, 5", False),
    "nuts": ("0.1, _IMM", False),
    "mala": ("0.1", False),
    "rmh": (_PROPOSAL, False),
    "normal_random_walk": ("0.1", False),
    "additive_step_random_walk": (_PROPOSAL, False),
    "barker_proposal": ("0.1", False),
    "ghmc": ("0.1, _IMM, 0.9, 0.1", True),
    "mclmc": ("1.0, 0.1", True),
}


def _pointers(tree) -> set[int]:
    return {leaf.unsafe_buffer_pointer() for leaf in jax.tree.leaves(tree) if isinstance(leaf, jax.Array)}


def _algorithm(name):
    arguments, keyed = _ALGORITHMS[name]
    return eval(f"blackjax.{name}(_logdensity, {arguments})"), keyed


def test_the_table_lists_every_algorithm_checked_here():
    assert {name.rpartition(".")[2] for name in array_api.BLACKJAX_ALGORITHMS} == set(_ALGORITHMS)


@pytest.mark.parametrize("name", sorted(_ALGORITHMS))
def test_init_holds_the_position_and_a_donated_step_reuses_the_state(name):
    algorithm, keyed = _algorithm(name)
    position = {"a": jnp.ones(2), "b": jnp.zeros(3)}
    key = jax.random.key(1)
    state = algorithm.init(position, key) if keyed else algorithm.init(position)
    leaves = jax.tree.leaves(state)
    pointers = [leaf.unsafe_buffer_pointer() for leaf in leaves]
    assert _pointers(position) <= set(pointers)  # the position's arrays, as they are
    assert len(pointers) == len(set(pointers))  # nothing twice
    # nothing of the algorithm's or the log density's arrays, nor the key: only the position is held
    assert not set(pointers) & (_pointers(_IMM) | _pointers(_CENTER) | _pointers(jax.random.key_data(key)))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail here
        new, _ = jax.jit(algorithm.step, donate_argnums=1)(jax.random.key(0), state)
    assert jax.tree.structure(new) == jax.tree.structure(state)
    assert [(a.shape, a.dtype) for a in jax.tree.leaves(new)] == [(a.shape, a.dtype) for a in leaves]
    assert all(leaf.is_deleted() for leaf in leaves)
    assert all(leaf.is_deleted() for leaf in jax.tree.leaves(position))  # held by the state: donated with it

    module = cst.parse_module("import blackjax\n")
    value = cst.parse_expression(f"blackjax.{name}(logdensity, 0.1)")
    imports = ImportTable.from_module(module)
    assert makes_blackjax_algorithm(value, imports)
    step = library_method(value, "step", imports)
    assert [p.name for p in step.signature.params] == ["rng_key", "state"]
    assert dict(step.outputs)["state"] == PRESERVED and step.parts == (frozenset({"state"}), frozenset())
    assert library_method(value, "run", imports) is None


@pytest.mark.parametrize("name", sorted(set(_ALGORITHMS) - {"normal_random_walk"}))
def test_the_module_level_init_holds_the_position_too(name):
    _, keyed = _ALGORITHMS[name]
    position = {"a": jnp.ones(2), "b": jnp.zeros(3)}
    init = getattr(blackjax, name).init
    state = init(position, _logdensity, jax.random.key(1)) if keyed else init(position, _logdensity)
    assert _pointers(position) <= _pointers(state)
    assert call_effect(f"blackjax.{name}.init") == HOLDS


def test_a_plain_function_has_no_module_level_init():
    assert not hasattr(blackjax.normal_random_walk, "init")
    assert call_effect("blackjax.normal_random_walk.init") is None

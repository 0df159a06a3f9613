"""The jax-md entries of ``lint/values/array_api.py`` (``JAX_MD_STEPPERS``,
``JAX_MD_INIT_TWICE``) and ``lint/callables/library_callables.py`` checked under
real jax-md 0.2.29 (CPU, jax 0.10.2): every simulator's and minimizer's
``apply_fn`` returns a state with the structure, shapes and dtypes of the one it
is given and reuses it when donated; every ``init_fn`` holds no buffer twice,
except ``npt_nose_hoover``'s, whose state as made cannot be donated at all."""

import functools
import warnings

import libcst as cst
import pytest

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.library_callables import pair_field
from jaxmem.lint.values import array_api
from jaxmem.lint.values.usefulness import PRESERVED

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax_md = pytest.importorskip("jax_md")
from jax_md import energy, minimize, simulate, space  # noqa: E402

KEY = jax.random.PRNGKey(0)


def _system(name: str):
    """``(init_fn, apply_fn), init arguments, apply keywords`` for the stepper ``name``
    on 32 soft spheres in a periodic 2-d box (an npt box in fractional coordinates)."""
    module, function = name.rsplit(".", 1)
    factory = getattr({"jax_md.simulate": simulate, "jax_md.minimize": minimize}[module], function)
    positions = jax.random.uniform(KEY, (32, 2))
    if function == "npt_nose_hoover":
        displacement, shift = space.periodic_general(5.0, fractional_coordinates=True)
        pair = factory(energy.soft_sphere_pair(displacement), shift, 1e-3, pressure=0.05, kT=0.1)
        return pair, (KEY, positions, 5.0 * jnp.eye(2)), {"pressure": 0.05}
    displacement, shift = space.periodic(5.0)
    energy_fn = energy.soft_sphere_pair(displacement)
    if module == "jax_md.minimize":
        extra = (1e-3,) if function == "gradient_descent" else ()
        return factory(energy_fn, shift, *extra), (positions * 5.0,), {}
    if function == "nve":  # its init takes the temperature
        init_fn, apply_fn = factory(energy_fn, shift, 1e-3)
        return (functools.partial(init_fn, kT=0.1), apply_fn), (KEY, positions * 5.0), {}
    return factory(energy_fn, shift, 1e-3, kT=0.1), (KEY, positions * 5.0), {}


def _pointers(tree) -> list[int]:
    return [leaf.unsafe_buffer_pointer() for leaf in jax.tree.leaves(tree) if isinstance(leaf, jax.Array)]


def test_the_table_names_functions_jax_md_has():
    for name in array_api.JAX_MD_STEPPERS | array_api.JAX_MD_INIT_TWICE:
        module, function = name.rsplit(".", 1)
        assert callable(getattr({"jax_md.simulate": simulate, "jax_md.minimize": minimize}[module], function))


@pytest.mark.parametrize("name", sorted(array_api.JAX_MD_STEPPERS))
def test_each_apply_fn_keeps_the_state_shape_and_reuses_it_when_donated(name):
    (init_fn, apply_fn), args, options = _system(name)
    state = jax.jit(apply_fn)(init_fn(*args), **options)  # a jit result, as after a first step
    step = jax.jit(apply_fn, donate_argnums=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*donated buffers were not usable")
        for _ in range(2):
            old = state
            state = step(state, **options)
    assert jax.tree.structure(state) == jax.tree.structure(old)
    for new_leaf, old_leaf in zip(jax.tree.leaves(state), jax.tree.leaves(old)):
        assert jnp.shape(new_leaf) == jnp.shape(old_leaf) and jnp.result_type(new_leaf) == jnp.result_type(old_leaf)
    # Every donated leaf was reused (no "not usable" warning above); a leaf apply_fn
    # never reads is dropped by jit, not donated, and stays (npt_nose_hoover: 3 of 18).
    deleted = [leaf.is_deleted() for leaf in jax.tree.leaves(old)]
    assert sum(deleted) * 2 > len(deleted), deleted


@pytest.mark.parametrize("name", sorted(array_api.JAX_MD_STEPPERS))
def test_only_the_listed_inits_hold_one_buffer_twice(name):
    (init_fn, _), args, _ = _system(name)
    pointers = _pointers(init_fn(*args))
    assert (len(pointers) != len(set(pointers))) == (name in array_api.JAX_MD_INIT_TWICE)


def test_an_init_may_hold_its_arguments_as_they_are():
    # brownian's state holds the key and the positions it was given: the init is a
    # holding call, and an argument read after the donating call shares its buffers.
    (init_fn, _), args, _ = _system("jax_md.simulate.brownian")
    assert set(_pointers(args)) <= set(_pointers(init_fn(*args)))


@pytest.mark.parametrize("source, position, verdict", [
    ("simulate.nve(energy_fn, shift, 1e-3)", 1, PRESERVED),
    ("jax_md.minimize.fire_descent(energy_fn, shift)", 1, PRESERVED),
    ("simulate.nve(energy_fn, shift, 1e-3)", 0, None),  # init_fn: no usefulness contract
    ("simulate.nvt_nose_hoover_invariant(energy_fn, state, kT)", 1, None),  # not a pair
])
def test_the_apply_fn_of_a_pair_has_the_contract(source, position, verdict):
    module = cst.parse_module("import jax_md\nfrom jax_md import simulate\n")
    known = pair_field(cst.parse_expression(source), position, 2, ImportTable.from_module(module))
    assert (known and dict(known.outputs)["state"]) == verdict

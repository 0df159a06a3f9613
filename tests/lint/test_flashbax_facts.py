"""The flashbax entries of ``lint/values/array_api.py`` and
``lint/callables/library_callables.py`` checked under real flashbax 0.1.3:
what ``init``, ``add``, ``sample``, ``can_sample`` and ``Vault`` do with their
arguments, by buffer identity and by donating under ``jax.jit``."""

import warnings

import libcst as cst
import pytest

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.library_callables import library_method, makes_flashbax_buffer
from jaxmem.lint.values import array_api
from jaxmem.lint.values.array_api import READS, call_effect

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
fbx = pytest.importorskip("flashbax")

_SINGLE = dict(max_length=8, min_length=4, sample_batch_size=2)
_SEQUENCES = dict(add_batch_size=2, sample_batch_size=2, sample_sequence_length=2, period=1,
                  min_length_time_axis=2, max_length_time_axis=8)
# Each factory of FLASHBAX_BUFFERS: its arguments, and a batch its ``add`` accepts.
_FACTORIES = {
    "flat_buffer": (_SINGLE, lambda t: t),
    "item_buffer": (_SINGLE, lambda t: t),
    "prioritised_flat_buffer": (_SINGLE, lambda t: t),
    "prioritised_item_buffer": (_SINGLE, lambda t: t),
    "trajectory_buffer": (_SEQUENCES, lambda t: jax.tree.map(lambda x: jnp.stack([jnp.stack([x] * 3)] * 2), t)),
    "prioritised_trajectory_buffer": (
        _SEQUENCES, lambda t: jax.tree.map(lambda x: jnp.stack([jnp.stack([x] * 3)] * 2), t)),
}


def _transition():
    return {"obs": jnp.arange(3.0), "reward": jnp.float32(1.0)}


def _pointers(tree) -> set[int]:
    return {leaf.unsafe_buffer_pointer() for leaf in jax.tree.leaves(tree) if isinstance(leaf, jax.Array)}


def _make(name):
    kwargs, batch = _FACTORIES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # flashbax's notes on adjusted lengths
        return getattr(fbx, "make_" + name)(**kwargs), batch


def test_the_table_lists_every_factory_checked_here_under_each_import_path():
    assert {name.rpartition(".make_")[2] for name in array_api.FLASHBAX_BUFFERS} == set(_FACTORIES)
    for name in _FACTORIES:
        for path in (f"flashbax.make_{name}", f"flashbax.buffers.make_{name}",
                     f"flashbax.buffers.{name}.make_{name}"):
            assert path in array_api.FLASHBAX_BUFFERS
            module, _, attribute = path.rpartition(".")
            assert getattr(__import__(module, fromlist=[attribute]), attribute) is getattr(fbx, "make_" + name)
            assert array_api.array_free_call(path) == "if_args"  # a buffer holds functions only


@pytest.mark.parametrize("name", sorted(_FACTORIES))
def test_init_makes_new_arrays_and_a_donated_add_reuses_every_leaf(name, recwarn):
    buffer, batch = _make(name)
    transition = _transition()
    state = buffer.init(transition)
    assert not _pointers(state) & _pointers(transition)  # init keeps nothing of its argument
    assert not [leaf for leaf in jax.tree.leaves(buffer) if isinstance(leaf, jax.Array)]  # functions only
    shapes = jax.tree.map(lambda x: (x.shape, x.dtype), state)
    add = jax.jit(buffer.add, donate_argnums=0)
    for _ in range(3):
        old, state = state, add(state, batch(transition))
        assert all(leaf.is_deleted() for leaf in jax.tree.leaves(old))
        assert jax.tree.map(lambda x: (x.shape, x.dtype), state) == shapes
    assert not any("not usable" in str(w.message) for w in recwarn.list)
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(transition))


@pytest.mark.parametrize("name", sorted(_FACTORIES))
def test_sample_and_can_sample_return_nothing_of_the_state(name):
    buffer, batch = _make(name)
    state = buffer.init(_transition())
    for _ in range(6):
        state = buffer.add(state, batch(_transition()))
    assert buffer.can_sample(state)
    assert not _pointers(buffer.can_sample(state)) & _pointers(state)
    assert not _pointers(buffer.sample(state, jax.random.key(0))) & _pointers(state)
    assert {"sample", "can_sample"} == array_api.READING_METHODS["flashbax.make_" + name]


def _arrays_reachable(value, seen=None, depth=0) -> list:
    """Every jax array an object refers to (attributes, containers), a few levels deep."""
    seen = set() if seen is None else seen
    if id(value) in seen or depth > 8:
        return []
    seen.add(id(value))
    if isinstance(value, jax.Array):
        return [value]
    if isinstance(value, dict):
        parts = list(value.values())
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = list(getattr(value, "__dict__", {}).values())
    return [array for part in parts for array in _arrays_reachable(part, seen, depth + 1)]


def test_a_vault_keeps_no_array_of_its_structure_and_writes_before_it_returns(tmp_path):
    from flashbax.vault import Vault

    assert call_effect("flashbax.vault.Vault") == READS
    assert array_api.READING_METHODS["flashbax.vault.Vault"] == {"write"}
    buffer, _ = _make("flat_buffer")
    transition = _transition()
    state = buffer.init(transition)
    vault = Vault(vault_name="facts", experience_structure=state.experience, rel_dir=str(tmp_path))
    assert _arrays_reachable(vault) == []
    add = jax.jit(buffer.add, donate_argnums=0)
    first = state
    for step in range(3):
        state = add(state, jax.tree.map(lambda x: x + step, transition))
        assert vault.write(state) == 1
        assert _arrays_reachable(vault) == []  # write keeps nothing of the state
    assert all(leaf.is_deleted() for leaf in jax.tree.leaves(first))
    read = vault.read()
    assert read.experience["reward"].shape[1] == 3
    assert [float(r) for r in read.experience["reward"][0]] == [1.0, 2.0, 3.0]


def test_library_method_knows_add_only_of_a_buffer_a_factory_made():
    imports = ImportTable.from_module(cst.parse_module("import flashbax as fbx\nfrom flashbax import buffers\n"))
    made = cst.parse_expression("fbx.make_flat_buffer(max_length=8, min_length=1, sample_batch_size=2)")
    assert makes_flashbax_buffer(made, imports)
    assert makes_flashbax_buffer(cst.parse_expression("buffers.make_trajectory_buffer(**kw)"), imports)
    assert not makes_flashbax_buffer(cst.parse_expression("fbx.make_trajectory_queue(**kw)"), imports)
    assert not makes_flashbax_buffer(cst.parse_expression("make_flat_buffer(8, 1, 2)"), imports)
    add = library_method(made, "add", imports)
    assert add is not None and [p.name for p in add.signature.params] == ["state", "batch"]
    assert add.parts == (frozenset({"state"}),)
    assert library_method(made, "sample", imports) is None

"""Every entry of the library-call table in ``lint/values/array_api.py`` checked
under real JAX: what a call's result holds is tested by buffer identity."""

import copy
import inspect
import typing

import libcst as cst
import pytest

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.library_callables import (
    makes_optax_transform,
    optax_field,
    optax_method,
)
from jaxmem.lint.values import array_api
from jaxmem.lint.values.array_api import (
    HOLDS,
    NEW,
    READS,
    TWICE,
    call_effect,
    maps_to_new_arrays,
)

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
optax = pytest.importorskip("optax")
flax = pytest.importorskip("flax")


def _pointers(tree) -> list[int]:
    return [leaf.unsafe_buffer_pointer() for leaf in jax.tree.leaves(tree) if isinstance(leaf, jax.Array)]


def _params():
    return {"w": jnp.ones((3, 4)), "b": jnp.arange(4.0)}


def _shares(result, params) -> bool:
    return bool(set(_pointers(result)) & set(_pointers(params)))


# Arguments to build each optax transform of OPTAX_NEW_STATE (default: a learning rate).
_OPTAX_ARGS = {
    "clip_by_global_norm": (1.0,), "clip": (1.0,), "add_decayed_weights": (1e-4,), "scale": (0.5,),
    "scale_by_adam": (), "scale_by_rms": (), "zero_nans": (), "identity": (), "scale_by_learning_rate": (1e-3,),
    "scale_by_schedule": (optax.constant_schedule(1e-3),), "trace": (0.9,), "ema": (0.9,),
    "noisy_sgd": (1e-3,), "adafactor": (1e-3,), "fromage": (1e-3,),
    "scale_by_sign": (), "centralize": (), "keep_params_nonnegative": (), "contrib.normalize": (),
}


def _optax_function(name: str):
    """``optax.contrib.muon`` -> the function."""
    import functools

    return functools.reduce(getattr, name.split(".")[1:], optax)


def _params3():
    """Parameters with a matrix muon orthogonalises and vectors it hands to adam."""
    return {"w": jnp.ones((3, 4)), "b": jnp.arange(4.0), "m": jnp.ones((5, 6))}


@pytest.mark.parametrize("name", sorted(array_api.OPTAX_NEW_STATE - {"optax.chain"}))
def test_standard_optax_init_shares_no_buffer_with_params(name):
    short = name.removeprefix("optax.")
    tx = _optax_function(name)(*_OPTAX_ARGS.get(short, (1e-3,)))
    params = _params3()
    state = tx.init(params)
    assert not _shares(state, params)
    assert len(set(_pointers(state))) == len(_pointers(state))  # no array twice: donatable as a whole


@pytest.mark.parametrize("name", sorted(array_api.OPTAX_NEW_STATE - {"optax.chain", "optax.scale_by_schedule"}))
def test_standard_optax_init_keeps_no_hyperparameter_given_as_an_array(name):
    # every numeric parameter given as a strong-typed float32 array: none of them is in the state
    import inspect

    function = _optax_function(name)
    arrays = {}
    for param in inspect.signature(function).parameters.values():
        number = isinstance(param.default, (int, float)) and not isinstance(param.default, bool)
        if number or (param.default is inspect.Parameter.empty and param.kind is param.POSITIONAL_OR_KEYWORD):
            arrays[param.name] = jnp.asarray(param.default if number else 1e-3, jnp.float32)
    state = function(**arrays).init(_params3())
    assert not set(_pointers(state)) & set(_pointers(arrays))


@pytest.mark.parametrize("name", sorted(array_api.OPTAX_NEW_STATE_IF_ARRAY_FREE))
def test_optimizers_new_only_with_array_free_arguments_make_new_buffers_from_numbers(name):
    params = _params3()
    args = (optax.adam(1e-3), 1e-3) if name == "optax.contrib.schedule_free" else (1e-3,)
    state = _optax_function(name)(*args).init(params)
    assert not _shares(state, params)
    assert len(set(_pointers(state))) == len(_pointers(state))


@pytest.mark.parametrize("name", ["optax.contrib.schedule_free_adamw", "optax.contrib.dadapt_adamw",
                                  "optax.contrib.schedule_free", "optax.contrib.prodigy", "optax.contrib.dog"])
def test_optimizers_that_keep_an_array_they_are_given_are_not_listed(name):
    # schedule-free keeps ``b1`` and D-Adaptation ``estim_lr0`` when given as arrays; prodigy
    # and DoG keep the parameters themselves
    b1 = jnp.asarray(0.9, jnp.float32)
    params = _params3()
    kwargs = {"b1": b1} if "schedule_free" in name else {"estim_lr0": b1} if "dadapt" in name else {}
    args = (optax.adam(1e-3), 1e-3) if name == "optax.contrib.schedule_free" else (1e-3,)
    state = _optax_function(name)(*args, **kwargs).init(params)
    assert set(_pointers(state)) & set(_pointers((b1, params)))
    assert name not in array_api.OPTAX_NEW_STATE


_WRAPPED = {
    "optax.apply_if_finite": lambda inner: optax.apply_if_finite(inner, 3),
    "optax.masked": lambda inner: optax.masked(inner, {"w": True, "b": False, "m": True}),
    "optax.conditionally_mask": lambda inner: optax.conditionally_mask(inner, lambda step: step < 10),
    "optax.MultiSteps": lambda inner: optax.MultiSteps(inner, every_k_schedule=2),
    "optax.multi_transform": lambda inner: optax.multi_transform(
        {"a": inner, "b": optax.sgd(0.1)}, {"w": "a", "b": "b", "m": "a"}),
    "optax.partition": lambda inner: optax.partition({"a": inner, "b": optax.sgd(0.1)}, {"w": "a", "b": "b", "m": "a"}),
    "optax.named_chain": lambda inner: optax.named_chain(("clip", optax.clip(1.0)), ("inner", inner)),
}


@pytest.mark.parametrize("name", sorted(array_api.OPTAX_WRAPPERS))
def test_a_wrapper_of_standard_transforms_makes_new_buffers_and_one_keeping_params_does_not(name):
    assert set(_WRAPPED) == set(array_api.OPTAX_WRAPPERS)
    params = _params3()
    state = _WRAPPED[name](optax.adamw(1e-3)).init(params)
    assert not _shares(state, params)
    assert len(set(_pointers(state))) == len(_pointers(state))
    # the inner transform's state is kept as it is: one that keeps the parameters leaks them
    keep_params = optax.GradientTransformation(lambda p: {"start": p}, lambda u, s, p=None: (u, s))
    kept = _WRAPPED[name](keep_params).init(params)
    assert _shares(kept, params)


def test_multisteps_skip_function_makes_a_state_of_its_own():
    def keep(updates, gradient_step, params):
        return False, params

    params = _params3()
    assert _shares(optax.MultiSteps(optax.adam(1e-3), 2, should_skip_update_fn=keep).init(params), params)
    assert "should_skip_update_fn" in array_api.OPTAX_WRAPPERS["optax.MultiSteps"][1]


def test_inject_hyperparams_copies_numbers_and_keeps_a_strong_array():
    params = _params3()
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 100)
    assert array_api.array_free_call("optax.warmup_cosine_decay_schedule") == "if_args"
    for learning_rate in (1e-3, jnp.asarray(1e-3), schedule):  # a float, a weak-typed array, a schedule
        state = optax.inject_hyperparams(optax.adamw)(learning_rate=learning_rate).init(params)
        assert not _shares(state, params) and len(set(_pointers(state))) == len(_pointers(state))
    strong = jnp.asarray(1e-3, jnp.float32)
    state = optax.inject_hyperparams(optax.adamw)(learning_rate=strong).init(params)
    assert strong.unsafe_buffer_pointer() in _pointers(state)  # why each hyperparameter must hold no array
    # a function's result is kept as it is too: why no lambda or def of the program is taken
    state = optax.inject_hyperparams(optax.adamw)(learning_rate=lambda count: strong).init(params)
    assert strong.unsafe_buffer_pointer() in _pointers(state)


def test_lbfgs_state_holds_one_array_twice_and_is_not_listed():
    state = optax.lbfgs(1e-3).init(_params())
    assert len(set(_pointers(state))) < len(_pointers(state))
    assert "optax.lbfgs" not in array_api.OPTAX_NEW_STATE


def test_chain_of_standard_transforms_shares_no_buffer():
    params = _params()
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3), optax.sgd(0.1, momentum=0.9))
    assert not _shares(tx.init(params), params)


def test_lookahead_keeps_params_and_init_synced_holds_the_same_tree_twice():
    params = _params()
    assert call_effect("optax.LookaheadParams.init_synced") == TWICE
    synced = optax.LookaheadParams.init_synced(params)
    assert _pointers(synced.fast) == _pointers(synced.slow) == _pointers(params)
    assert "optax.lookahead" not in array_api.OPTAX_NEW_STATE


def test_train_state_create_holds_params_by_identity():
    from flax.training import train_state

    assert call_effect("flax.training.train_state.TrainState.create") == HOLDS
    params = _params()
    state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
    assert state.params["w"] is params["w"]
    # tx and apply_fn are static fields: not leaves of the state
    assert {"apply_fn", "tx"} <= array_api.STATIC_FIELDS
    assert len(jax.tree.leaves(state)) == len(jax.tree.leaves((state.step, params, state.opt_state)))


def test_replace_holds_the_fields_it_does_not_replace():
    from flax.training import train_state

    assert call_effect(None, "replace") == HOLDS
    state = train_state.TrainState.create(apply_fn=None, params=_params(), tx=optax.sgd(0.1))
    new = state.replace(step=state.step + 1)
    assert new.params["b"] is state.params["b"]


def test_namedtuple_replace_and_constructors_hold_their_arguments():
    class Pair(typing.NamedTuple):
        a: jax.Array
        b: jax.Array

    x, y = jnp.ones(2), jnp.zeros(2)
    assert call_effect(None, "_replace") == HOLDS
    assert Pair(x, y)._replace(b=x).a is x
    assert call_effect("dict") == call_effect("tuple") == call_effect("list") == HOLDS
    assert dict(a=x)["a"] is x and tuple([x])[0] is x


def test_device_put_and_asarray_may_return_the_very_same_array():
    x = jnp.ones(3)
    assert call_effect("jax.device_put") == call_effect("jax.numpy.asarray") == HOLDS
    assert jax.device_put(x) is x
    assert jnp.asarray(x) is x


def _call(source: str) -> cst.Call:
    return cst.parse_expression(source)


@pytest.mark.parametrize("source,stack", [
    ("jnp.asarray([x] * n)", lambda x: jnp.asarray([x] * 2)),
    ("jnp.asarray(n * [x])", lambda x: jnp.asarray(1 * [x])),
    ("jnp.asarray([x])", lambda x: jnp.asarray([x])),
    ("jnp.asarray((x, x))", lambda x: jnp.asarray((x, x))),
    ("jnp.asarray([v for v in xs])", lambda x: jnp.asarray([v for v in [x]])),
    ("jnp.asarray([x], dtype=d)", lambda x: jnp.asarray([x], dtype=x.dtype)),
])
def test_asarray_of_a_written_out_list_stacks_into_a_new_array(source, stack):
    assert call_effect("jax.numpy.asarray", None, _call(source)) == NEW
    x = jnp.ones(3)
    result = stack(x)
    assert result is not x and result.ndim == x.ndim + 1
    assert result.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()


@pytest.mark.parametrize("source", ["jnp.asarray(x)", "jnp.asarray(*xs)", "jnp.asarray(xs)", "jnp.asarray([*xs])",
                                    "jnp.asarray(a=[x])"])
def test_asarray_of_anything_else_may_return_its_argument(source):
    assert call_effect("jax.numpy.asarray", None, _call(source)) == HOLDS


@pytest.mark.parametrize("source,fresh", [
    ("jnp.array(x)", True), ("jnp.array(x, copy=True)", True), ("jnp.array(x, dtype=d)", True),
    ("jnp.array(x, copy=False)", False), ("jnp.array(x, copy=None)", False), ("jnp.array(x, d, False)", False),
    ("jnp.array(*args)", False), ("jnp.array(x, **options)", False),
])
def test_jnp_array_is_new_memory_only_when_it_copies(source, fresh):
    assert array_api.is_fresh_constructor("jax.numpy.array", _call(source)) is fresh
    assert call_effect("jax.numpy.array", None, _call(source)) == (NEW if fresh else HOLDS)
    x = jnp.ones(3)
    assert jnp.array(x) is not x and jnp.array(x, copy=True) is not x
    assert jnp.array(x, copy=False) is x and jnp.array(x, copy=None) is x


@pytest.mark.parametrize("name,make", [
    ("copy.deepcopy", copy.deepcopy), ("jax.numpy.copy", lambda t: jax.tree.map(jnp.copy, t)),
    ("jax.numpy.zeros_like", lambda t: jax.tree.map(jnp.zeros_like, t)),
    ("jax.numpy.ones_like", lambda t: jax.tree.map(jnp.ones_like, t)),
    ("optax.tree_utils.tree_zeros_like", optax.tree_utils.tree_zeros_like),
])
def test_new_memory_calls_share_no_buffer(name, make):
    params = _params()
    assert call_effect(name) == NEW
    assert not _shares(make(params), params)


def test_nnx_split_and_state_hold_the_modules_arrays():
    from flax import nnx

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    kernel = model.kernel[...]
    _, state = nnx.split(model)
    assert call_effect("flax.nnx.split") == array_api.PARTITION and call_effect("flax.nnx.state") == HOLDS
    assert kernel.unsafe_buffer_pointer() in _pointers(state)
    assert kernel.unsafe_buffer_pointer() in _pointers(nnx.state(model))


def test_equinox_partition_holds_the_arrays():
    eqx = pytest.importorskip("equinox")

    tree = {"w": jnp.ones(3), "n": 2}
    arrays, static = eqx.partition(tree, eqx.is_array)
    assert call_effect("equinox.partition") == array_api.PARTITION and call_effect("equinox.combine") == HOLDS
    assert arrays["w"] is tree["w"]
    assert eqx.combine(arrays, static)["w"] is tree["w"]


def test_flax_freeze_and_unfreeze_hold_the_leaves():
    from flax.core import freeze, unfreeze

    params = _params()
    assert call_effect("flax.core.freeze") == call_effect("flax.core.unfreeze") == HOLDS
    assert unfreeze(freeze(params))["w"] is params["w"]


@pytest.mark.parametrize("frozen", [False, True])
def test_flax_pop_splits_the_variables_into_disjoint_parts_held_as_they_are(frozen):
    from flax.core import freeze, pop

    variables = {"params": _params(), "batch_stats": {"mean": jnp.zeros(4)}}
    rest, params = pop(freeze(variables) if frozen else variables, "params")
    assert call_effect("flax.core.pop") == call_effect("flax.core.frozen_dict.pop") == array_api.PARTITION
    assert params["w"] is variables["params"]["w"] and rest["batch_stats"]["mean"] is variables["batch_stats"]["mean"]
    assert not _shares(rest, params)


def test_flax_flatten_and_unflatten_dict_hold_each_leaf_once():
    from flax import traverse_util

    variables = {"params": _params()}
    flat = traverse_util.flatten_dict(variables)
    assert call_effect("flax.traverse_util.flatten_dict") == call_effect("flax.traverse_util.unflatten_dict") == HOLDS
    assert flat[("params", "w")] is variables["params"]["w"]
    assert sorted(_pointers(flat)) == sorted(_pointers(variables))
    back = traverse_util.unflatten_dict(flat)
    assert back["params"]["b"] is variables["params"]["b"] and sorted(_pointers(back)) == sorted(_pointers(variables))


def test_reading_calls_return_or_keep_nothing_new():
    x = jnp.ones(3)
    assert call_effect("jax.block_until_ready") == call_effect("print") == READS
    assert call_effect("logging.info") == call_effect("absl.logging.info") == READS
    assert jax.block_until_ready(x) is x  # returns its argument: a holding result, keeps no other reference
    shapes = jax.eval_shape(lambda t: t, _params())
    assert not [leaf for leaf in jax.tree.leaves(shapes) if isinstance(leaf, jax.Array)]


def test_array_free_calls_hold_no_array():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = jax.devices()
    mesh = Mesh(devices, ("data",))
    values = [len(devices), jax.local_devices(), jax.device_count(), jax.process_index(), mesh,
              NamedSharding(mesh, PartitionSpec("data")), jax.NamedSharding(mesh, jax.P()), optax.adam(1e-3),
              int(jnp.ones(())), jnp.ones((3, 4)).shape[0]]
    assert jax.NamedSharding is NamedSharding and jax.P is PartitionSpec
    for value in values:
        assert not [leaf for leaf in jax.tree.leaves(value) if isinstance(leaf, jax.Array)], value
    for name in ("len", "jax.devices", "jax.local_devices", "jax.device_count", "jax.process_index"):
        assert array_api.array_free_call(name) == "always"
    for name in ("jax.sharding.Mesh", "jax.sharding.NamedSharding", "jax.NamedSharding", "jax.P", "optax.adam",
                 "ml_collections.ConfigDict"):
        assert array_api.array_free_call(name) == "if_args"


def test_every_table_entry_names_the_version_it_was_checked_against():
    for table in (array_api.CALL_EFFECTS, array_api.METHOD_EFFECTS):
        for name, (effect, checked) in table.items():
            assert effect in (NEW, HOLDS, TWICE, READS, array_api.PARTITION), name
            assert checked.split()[0] in ("jax", "flax", "optax", "equinox", "flashbax", "mujoco-mjx", "blackjax",
                                          "Python"), name


def test_jitted_results_are_new_buffers_even_for_passed_through_outputs():
    # provenance counts a jitted call's result as fresh: checked here on jax 0.10.2 (CPU),
    # where an output that is an input passed through still gets its own buffer.
    x = jnp.ones(3)
    out = jax.jit(lambda s: {"p": s["p"], "c": s["c"] + 1})({"p": x, "c": jnp.zeros(())})
    assert out["p"] is not x
    assert out["p"].unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    y = jnp.ones((jax.local_device_count(), 3))
    mapped = jax.pmap(lambda s: s)(y)  # pmap called where it is made: new buffers too
    assert mapped is not y and mapped.addressable_shards[0].data.unsafe_buffer_pointer() != \
        y.addressable_shards[0].data.unsafe_buffer_pointer()


def test_collectives_and_loops_keep_the_carry_shape_and_dtype():
    state = {"w": jnp.ones((2, 3)), "n": jnp.zeros((), jnp.int32)}

    def same(out, ref):
        return jax.tree.map(lambda a, b: (a.shape, a.dtype) == (b.shape, b.dtype), out, ref)

    def body(_, s):
        return jax.tree.map(lambda x: x + 1, s)

    assert all(jax.tree.leaves(same(jax.lax.fori_loop(0, 3, body, state), state)))
    assert all(jax.tree.leaves(same(jax.lax.while_loop(lambda s: s["n"] < 3, lambda s: body(0, s), state), state)))
    carry, _ = jax.lax.scan(lambda c, x: (body(0, c), x), state, jnp.arange(3))
    assert all(jax.tree.leaves(same(carry, state)))
    assert array_api.CARRY_PRESERVING == {"jax.lax.fori_loop": 3, "jax.lax.while_loop": 2, "jax.lax.scan": 1}
    x = jnp.ones((jax.device_count(), 3))
    for name in ("pmean", "psum", "pmax", "pmin"):
        out = jax.pmap(lambda v, f=getattr(jax.lax, name): f(v, "i"), axis_name="i")(x)
        assert (out.shape, out.dtype) == (x.shape, x.dtype)
        assert "jax.lax." + name in array_api.SHAPE_PRESERVING
    out = jax.jit(lambda v: jax.lax.optimization_barrier(jax.lax.with_sharding_constraint(
        v, jax.sharding.SingleDeviceSharding(jax.devices()[0]))))(x)
    assert (out.shape, out.dtype) == (x.shape, x.dtype)


def test_a_cast_may_keep_the_buffer_so_it_is_a_maybe():
    import warnings

    from jaxmem.lint.values.usefulness import output_reach

    cast = jax.jit(lambda x: x.astype(jnp.float32), donate_argnums=0)
    same = jnp.ones(8, jnp.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cast(same)  # the same dtype: the output takes the donated buffer
    assert same.is_deleted()
    narrow = jnp.ones(8, jnp.bfloat16)
    cast(narrow)  # another size: no output can take it
    assert not narrow.is_deleted()
    module = cst.parse_module("import jax.numpy as jnp\ndef f(x, y):\n    return x.astype(jnp.float32), jnp.astype(y, 'f4')\n")
    verdicts = output_reach(module.body[1], ImportTable.from_module(module))
    assert verdicts == {"x": "maybe", "y": "maybe"}


def test_slice_updates_keep_the_operand_shape_and_dtype():
    cache, rows = jnp.zeros((8, 3), jnp.bfloat16), jnp.ones((2, 3), jnp.bfloat16)
    outs = [jax.lax.dynamic_update_slice(cache, rows, (4, 0)),
            jax.lax.dynamic_update_slice_in_dim(cache, rows, 4, axis=0),
            jax.lax.dynamic_update_index_in_dim(cache, rows[0], 4, axis=0)]
    assert all((out.shape, out.dtype) == (cache.shape, cache.dtype) for out in outs)
    assert set(array_api.UPDATED_OPERAND) == {
        "jax.lax.dynamic_update_slice", "jax.lax.dynamic_update_slice_in_dim", "jax.lax.dynamic_update_index_in_dim"}
    assert all(inspect.signature(getattr(jax.lax, name.rsplit(".", 1)[1])).parameters["operand"].kind
               is inspect.Parameter.POSITIONAL_OR_KEYWORD for name in array_api.UPDATED_OPERAND)


def test_nnx_split_with_filters_returns_disjoint_states():
    from flax import nnx

    class Count(nnx.Variable):
        pass

    class Model(nnx.Module):
        def __init__(self):
            self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            self.count = Count(jnp.zeros(()))

    _, params, counts = nnx.split(Model(), nnx.Param, Count)
    assert params and counts
    assert not set(_pointers(params)) & set(_pointers(counts))


def test_loop_carries_by_keyword_keep_their_structure():
    state = {"w": jnp.ones((2, 3))}
    carry, ys = jax.lax.scan(lambda c, _: (jax.tree.map(lambda x: x * 2, c), ()), init=state, xs=None, length=3)
    assert jax.tree.map(lambda a, b: (a.shape, a.dtype) == (b.shape, b.dtype), carry, state) == {"w": True}
    result = jax.lax.fori_loop(0, 3, lambda _, s: s, init_val=state)
    assert result["w"].shape == (2, 3)
    assert array_api.CARRY_KEYWORDS == {"jax.lax.fori_loop": "init_val", "jax.lax.while_loop": "init_val",
                                        "jax.lax.scan": "init"}


def test_structure_parts_hold_no_arrays():
    from flax import nnx

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    parts = nnx.split(model)
    assert jax.tree.leaves(parts[array_api.ARRAY_FREE_PARTS["flax.nnx.split"]]) == []
    flat = jax.tree_util.tree_flatten({"w": jnp.ones(3)})
    assert not isinstance(flat[array_api.ARRAY_FREE_PARTS["jax.tree_util.tree_flatten"]], jax.Array)


def test_nnx_merge_and_state_hold_the_given_arrays():
    from flax import nnx

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    merged = nnx.merge(graphdef, state)
    assert set(_pointers(nnx.state(merged))) == set(_pointers(state))
    assert {"flax.nnx.merge", "flax.nnx.state"} <= array_api.SHAPE_PRESERVING


def test_nnx_optimizer_with_a_standard_transform_holds_none_of_the_models_arrays():
    from flax import nnx

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    for tx in (optax.sgd(1e-3), optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3))):
        optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
        assert not _shares(nnx.state(optimizer), nnx.state(model))
        assert not hasattr(optimizer, "model")  # flax 0.12.8 keeps no reference to it
    keeping = optax.GradientTransformation(lambda p: {"p": p}, lambda u, s, p=None: (u, s))
    assert _shares(nnx.state(nnx.Optimizer(model, keeping, wrt=nnx.Param)), nnx.state(model))


def test_transforms_applied_at_once_see_tracers_and_keep_nothing():
    x = jnp.ones((2, 3))
    for name in sorted(array_api.TRACING_TRANSFORMS):
        seen = []

        def f(v, seen=seen):  # a new function each time: transforms cache their traces
            seen.append(v)
            return v * 2

        transform = getattr(jax, name.removeprefix("jax."))
        if name in ("jax.grad", "jax.value_and_grad"):
            transform(lambda v: f(v).sum())(x)
        else:
            transform(f)(x)
        assert seen and all(isinstance(v, jax.core.Tracer) for v in seen), name


@pytest.mark.parametrize("make", [
    lambda: optax.sgd(0.02), lambda: optax.identity(), lambda: optax.scale(0.1), lambda: optax.clip(1.0),
    lambda: optax.clip_by_global_norm(1.0), lambda: optax.add_decayed_weights(1e-4),
    lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1)),
])
def test_stateless_optax_transforms_hold_no_array(make):
    assert jax.tree.leaves(make().init(_params())) == []
    assert {"optax.sgd", "optax.chain", "optax.clip_by_global_norm"} <= array_api.OPTAX_NO_STATE


def test_sgd_with_momentum_or_a_schedule_holds_arrays():
    assert jax.tree.leaves(optax.sgd(0.1, momentum=0.9).init(_params()))
    assert jax.tree.leaves(optax.sgd(optax.constant_schedule(0.1)).init(_params()))



# Run apart: orbax's save leaves process state behind (threads, a changed
# dispatch path) that turns other tests' "Array has been deleted" into PJRT's
# "Buffer has been deleted or donated".
_SAVE_THEN_DONATE = """
import sys
import jax
import jax.numpy as jnp
from flax.training import checkpoints

params = {"w": jnp.ones((3, 4)), "b": jnp.arange(4.0)}
expected = jax.tree.map(lambda x: x.sum().item(), params)
checkpoints.save_checkpoint_multiprocess(sys.argv[1], params, 0)
jax.jit(lambda p: jax.tree.map(lambda x: x + 1, p), donate_argnums=0)(params)  # frees the saved arrays
assert all(leaf.is_deleted() for leaf in jax.tree.leaves(params))
restored = checkpoints.restore_checkpoint(sys.argv[1], target=None)
assert jax.tree.map(lambda x: x.sum().item(), restored) == expected, restored
print("restored intact")
"""


def test_flax_synchronous_checkpoint_save_keeps_nothing(tmp_path):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _SAVE_THEN_DONATE, str(tmp_path / "ckpt")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "restored intact" in run.stdout, run.stderr
    call = cst.parse_expression
    saver = "flax.training.checkpoints.save_checkpoint_multiprocess"
    assert array_api.saves_synchronously(saver, call("save(d, state, step, keep=3)"))
    assert not array_api.saves_synchronously(saver, call("save(d, state, step, orbax_checkpointer=c)"))
    assert not array_api.saves_synchronously(saver, call("save(d, state, step, **kw)"))
    assert not array_api.saves_synchronously(saver, call("save(d, state, 1, 'p', 1, False, None, manager)"))


def _module_at(qualified: str):
    """The module a ``FUNCTION_MODULES`` entry names (``flax.nnx.initializers`` is an attribute)."""
    import importlib

    parts = qualified.split(".")
    for length in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:length]))
        except ImportError:
            continue
        for part in parts[length:]:
            module = getattr(module, part)
        return module
    raise ImportError(qualified)


@pytest.mark.parametrize("qualified", sorted(array_api.FUNCTION_MODULES))
def test_lowercase_attributes_of_function_modules_hold_no_array(qualified):
    import numpy as np

    module = _module_at(qualified)
    names = [name for name in dir(module) if name[:1].islower()]
    assert names, qualified
    for name in names:
        value = getattr(module, name)
        assert array_api.library_function(f"{qualified}.{name}")
        assert not [leaf for leaf in jax.tree.leaves(value) if isinstance(leaf, (jax.Array, np.ndarray))], name
    assert not array_api.library_function(f"{qualified}._private")
    assert not array_api.library_function("mylib.relu")


@pytest.mark.parametrize("qualified", sorted(array_api.INITIALIZER_MAKERS))
def test_initializer_makers_return_functions_and_hold_only_their_arguments(qualified):
    module, _, name = qualified.rpartition(".")
    make = getattr(_module_at(module), name)
    arguments = {"constant": (0.5,), "variance_scaling": (1.0, "fan_in", "normal")}.get(name, ())
    made = make(*arguments)
    assert callable(made) and not isinstance(made, jax.Array), qualified
    assert array_api.array_free_call(qualified) == "if_args"
    shape = (3, 3, 3) if name == "delta_orthogonal" else (3, 3)
    assert isinstance(made(jax.random.key(0), shape), jax.Array)  # called in turn, it makes an array


def test_zeros_and_ones_are_initializers_not_makers():
    for name in ("zeros", "ones"):
        made = getattr(jax.nn.initializers, name)(jax.random.key(0), (2,))
        assert isinstance(made, jax.Array)
        assert f"jax.nn.initializers.{name}" not in array_api.INITIALIZER_MAKERS
        assert array_api.array_free_call(f"jax.nn.initializers.{name}") is None


def test_dtypes_as_values_hold_no_array_and_called_make_one():
    import numpy as np

    for module, prefix in ((jnp, "jax.numpy"), (np, "numpy")):
        for name in ("float32", "bfloat16" if module is jnp else "float64", "int32", "bool_"):
            dtype = getattr(module, name)
            assert array_api.array_free_call(f"{prefix}.{name}") == "value"
            assert not [leaf for leaf in jax.tree.leaves(dtype) if isinstance(leaf, (jax.Array, np.ndarray))]
    assert isinstance(jnp.float32(3.0), jax.Array)  # called: an array (not "always" array-free)


@pytest.mark.parametrize("make", [
    lambda: optax.adam(1e-3),
    lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3)),
    lambda: optax.inject_hyperparams(optax.sgd)(learning_rate=0.1, momentum=0.9),
    lambda: optax.MultiSteps(optax.adam(1e-3), every_k_schedule=2),
])
def test_a_jitted_transform_update_reuses_the_donated_updates_and_state(make, recwarn):
    # library_callables: update(updates, state, params) returns updates and a state of the
    # same structures, so both donated arguments find an output (no "not usable" warning).
    tx = make()
    params = _params()
    grads = jax.tree.map(lambda p: p * 2.0, params)
    state = tx.init(params)
    if isinstance(tx, optax.GradientTransformation):  # the pair (init, update); MultiSteps is a class
        unpacked_init, unpacked_update = tx
        assert (unpacked_init, unpacked_update) == (tx.init, tx.update)
    assert optax_field(1, 2) is optax_method("update") and optax_field(0, 2) is optax_method("init")
    new_updates, new_state = jax.jit(tx.update, donate_argnums=(0, 1))(grads, state, params)
    assert jax.tree.structure(new_updates) == jax.tree.structure(grads)
    assert jax.tree.structure(new_state) == jax.tree.structure(state)
    assert all(leaf.is_deleted() for leaf in jax.tree.leaves(grads))
    assert not any("not usable" in str(w.message) for w in recwarn.list)
    assert not params["w"].is_deleted()
    imports = ImportTable.from_module(cst.parse_module("import optax\n"))
    assert makes_optax_transform(cst.parse_expression("optax.inject_hyperparams(optax.sgd)(0.1)"), imports)
    assert not makes_optax_transform(cst.parse_expression("optax.tree.map_params(tx, f, s)"), imports)


def test_tree_map_of_an_operator_lambda_makes_new_arrays():
    # array_api.maps_to_new_arrays: jax operators return new arrays; a lambda returning its
    # argument (or choosing between arguments) does not.
    params = _params()
    assert not _shares(jax.tree.map(lambda x: x / 10.0, params), params)
    assert not _shares(jax.tree.map(lambda x: -x, params), params)
    assert _shares(jax.tree.map(lambda x: x if True else -x, params), params)
    def resolve(_):
        return None

    assert maps_to_new_arrays(cst.parse_expression("lambda x: x / 10.0"), resolve)
    assert maps_to_new_arrays(cst.parse_expression("lambda x: -x"), resolve)
    assert not maps_to_new_arrays(cst.parse_expression("lambda x: x if m else -x"), resolve)
    assert not maps_to_new_arrays(cst.parse_expression("lambda x: x"), resolve)


def test_tree_map_of_an_indexing_lambda_makes_new_arrays_only_when_it_changes_the_rank():
    # optax's _conditionality_test: jax.tree.map(lambda x: x[None], params) stacks a leading axis.
    params = _params()
    assert not _shares(jax.tree.map(lambda x: x[None], params), params)
    assert not _shares(jax.tree.map(lambda x: x[0], params), params)
    assert not _shares(jax.tree.map(lambda x: x[-1, ...], params), params)
    rows = next(iter(jax.tree.leaves(params))).shape[0]
    for trivial in (lambda x: x[:], lambda x: x[...], lambda x: x[0:rows]):
        assert _shares(jax.tree.map(trivial, params), params)  # jax hands the array itself back

    def resolve(_):
        return None

    for source in ("lambda x: x[None]", "lambda x: x[0]", "lambda x: x[-1, ...]", "lambda x: x[:, None]"):
        assert maps_to_new_arrays(cst.parse_expression(source), resolve), source
    for source in ("lambda x: x[:]", "lambda x: x[...]", "lambda x: x[0:n]", "lambda x: x[i]"):
        assert not maps_to_new_arrays(cst.parse_expression(source), resolve), source


def test_tree_map_of_a_constructor_lambda_makes_new_arrays():
    # brax's running_statistics._zeros_like: tree_map(lambda x: jnp.zeros(x.shape, ...), nest)
    params = _params()
    assert not _shares(jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), params), params)
    assert not _shares(jax.tree.map(lambda x: jnp.array(x), params), params)
    assert _shares(jax.tree.map(lambda x: jnp.asarray(x), params), params)  # may be x itself
    assert _shares(jax.tree.map(lambda x: jnp.array(x, copy=False), params), params)
    imports = ImportTable.from_module(cst.parse_module("import jax.numpy as jnp\n"))
    assert maps_to_new_arrays(cst.parse_expression("lambda x: jnp.zeros(x.shape, x.dtype)"), imports.resolve)
    assert maps_to_new_arrays(cst.parse_expression("lambda x: jnp.array(x)"), imports.resolve)
    assert not maps_to_new_arrays(cst.parse_expression("lambda x: jnp.asarray(x)"), imports.resolve)
    assert not maps_to_new_arrays(cst.parse_expression("lambda x: jnp.array(x, copy=False)"), imports.resolve)
    assert not maps_to_new_arrays(cst.parse_expression("lambda x: keep(x)"), imports.resolve)


def _test_case_class(qualified: str):
    module, _, name = qualified.rpartition(".")
    return getattr(__import__(module, fromlist=[name]), name)


@pytest.mark.parametrize("qualified", sorted(array_api.TEST_CASES))
def test_test_case_assertions_keep_no_argument(qualified):
    # array_api.TEST_CASES: after an assertion returns, nothing but the caller holds the array.
    import weakref

    pytest.importorskip(qualified.split(".")[0])
    case = _test_case_class(qualified)("__init__")
    calls = [("assertEqual", lambda x: (x.shape, (3,))), ("assertIsInstance", lambda x: (x, object)),
             ("assertIsNotNone", lambda x: (x,)), ("assertIs", lambda x: (x, x)), ("assertIn", lambda x: (x, [x])),
             ("assertTrue", lambda x: (bool(x.sum() > 0),)), ("assertNotEqual", lambda x: (x.shape, ()))]
    if hasattr(case, "assertLen"):
        calls.append(("assertLen", lambda x: ([x], 1)))
    for name in ("assertAllClose", "assertArraysEqual", "assertArraysAllClose", "assertDtypesMatch"):
        if hasattr(case, name):  # jax's JaxTestCase
            calls.append((name, lambda x: (x, x + 0)))
    for name, arguments in calls:
        array = jnp.ones(3)
        getattr(case, name)(*arguments(array))
        ref = weakref.ref(array)
        del array
        assert ref() is None, (qualified, name)


_STAGING_RUNS = {
    "jax.lax.scan": lambda body, c: jax.lax.scan(lambda carry, _: (body(carry), None), c, None, length=2)[0],
    "jax.lax.fori_loop": lambda body, c: jax.lax.fori_loop(0, 2, lambda i, carry: body(carry), c),
    "jax.lax.while_loop": lambda body, c: jax.lax.while_loop(lambda carry: carry.sum() < 6, body, c),
    "jax.lax.cond": lambda body, c: jax.lax.cond(True, body, body, c),
    "jax.lax.switch": lambda body, c: jax.lax.switch(1, [body, body], c),
    "jax.lax.map": lambda body, c: jax.lax.map(body, jnp.stack([c, c])),
}


@pytest.mark.parametrize("qualified", sorted(array_api.STAGING_HIGHER_ORDER))
def test_staging_higher_order_functions_trace_their_function(qualified):
    # array_api.STAGING_HIGHER_ORDER: called eagerly, they trace the function they are given, so a
    # donating jit inside it deletes neither the carry nor an array closed over.
    step = jax.jit(lambda s: s + 1.0, donate_argnums=0)
    outside = jnp.ones(3)
    carry = jnp.zeros(3)

    def body(c):
        return step(c) + 0.0 * step(outside).sum()

    _STAGING_RUNS[qualified](body, carry)
    assert not carry.is_deleted() and not outside.is_deleted()


def test_associative_scan_runs_its_function_on_concrete_arrays():
    # Not in STAGING_HIGHER_ORDER: a donating jit inside deletes what it is given.
    step = jax.jit(lambda s: s + 1.0, donate_argnums=0)
    outside = jnp.ones(3)
    with pytest.raises(Exception, match="deleted or donated|has been deleted"):
        jax.lax.associative_scan(lambda a, b: step(a) + b + 0.0 * step(outside).sum(), jnp.zeros((2, 3)))
    assert outside.is_deleted()
    assert "jax.lax.associative_scan" not in array_api.STAGING_HIGHER_ORDER


def test_replicate_copies_to_new_distinct_buffers():
    from flax import jax_utils

    assert call_effect("flax.jax_utils.replicate") == NEW
    params = _params()
    replicated = jax_utils.replicate(params)
    pointers = _pointers(replicated)
    assert not _shares(replicated, params)
    assert len(set(pointers)) == len(pointers)


def test_map_params_holds_the_states_leaves_as_they_are():
    assert call_effect("optax.tree.map_params") == HOLDS == call_effect("optax.tree_utils.tree_map_params")
    params = _params()
    opt = optax.adam(1e-3)
    state = opt.init(params)
    same = optax.tree.map_params(opt, lambda v: v, state)
    assert _pointers(same) == _pointers(state)


def _distinct(tree) -> bool:
    pointers = _pointers(tree)
    return len(set(pointers)) == len(pointers)


def test_distinct_results_hold_no_array_twice():
    from flax import nnx

    assert array_api.returns_distinct_arrays("flax.nnx.Rngs")
    assert array_api.returns_distinct_arrays("flax.nnx.Linear")
    assert array_api.returns_distinct_arrays("jax.numpy.stack") and array_api.returns_distinct_arrays("sorted")
    assert _distinct(nnx.state(nnx.Rngs(0, params=1)))
    assert _distinct(nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0))))
    assert _distinct(nnx.state(nnx.Conv(2, 3, kernel_size=(3,), rngs=nnx.Rngs(0))))


def test_containers_and_unknown_calls_may_hold_one_array_twice():
    from flax import nnx

    x = jnp.zeros(3)
    for name in ("flax.nnx.State", "flax.nnx.List", "flax.nnx.Optimizer", "somelib.make", None):
        assert not array_api.returns_distinct_arrays(name)
    assert not _distinct(nnx.List([x, x]))
    keeping = optax.GradientTransformation(lambda p: {"a": p, "b": p}, lambda u, s, p=None: (u, s))
    assert not _distinct(nnx.state(nnx.Optimizer(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), keeping, wrt=nnx.Param),
                                   nnx.optimizer.OptState))


def test_restore_checkpoint_returns_the_target_itself_or_new_arrays(tmp_path):
    from flax.training import checkpoints

    assert call_effect("flax.training.checkpoints.restore_checkpoint") == HOLDS
    target = _params()
    assert checkpoints.restore_checkpoint(str(tmp_path / "none"), target) is target
    checkpoints.save_checkpoint(str(tmp_path / "saved"), target, step=0)
    restored = checkpoints.restore_checkpoint(str(tmp_path / "saved"), target)
    assert not _shares(restored, target) and _distinct(restored)


@pytest.mark.parametrize("source,trees", [
    ("jax.tree.map(lambda v: v, state)", ["state"]),
    ("jax.tree_util.tree_map(lambda x: x.unbox() if boxed(x) else x, state, is_leaf=boxed)", ["state"]),
    ("optax.tree.map_params(opt, lambda v: v, state)", ["state"]),
    ("jax.tree.map(lambda v: v + 1, state)", None),
    ("jax.tree.map(lambda v: other, state)", None),
    ("jax.tree.map(f, state)", None),
])
def test_a_tree_map_of_a_parameter_holds_the_mapped_trees(source, trees):
    imports = ImportTable.from_module(cst.parse_module("import jax\nimport optax\n"))
    call = cst.parse_expression(source)
    found = array_api.mapped_trees(imports.resolve(call.func), call)
    assert (None if found is None else [cst.Module([]).code_for_node(t) for t in found]) == trees


def test_a_tree_map_returning_its_leaves_or_their_parts_makes_no_new_leaf():
    boxed = {"w": flax.linen.spmd.LogicallyPartitioned(jnp.ones(3), ("x",)), "b": jnp.zeros(2)}
    unboxed = jax.tree_util.tree_map(
        lambda x: x.unbox() if isinstance(x, flax.linen.spmd.LogicallyPartitioned) else x, boxed,
        is_leaf=lambda x: isinstance(x, flax.linen.spmd.LogicallyPartitioned))
    assert unboxed["w"] is boxed["w"].value and unboxed["b"] is boxed["b"]
    params = _params()
    assert jax.tree.map(lambda v: v, params)["w"] is params["w"]


def test_logical_partitioning_helpers_return_no_arrays():
    import flax.linen as nn
    from jax.sharding import Mesh

    for name in ("flax.linen.get_partition_spec", "flax.linen.logical_to_mesh_sharding"):
        assert array_api.array_free_call(name) == "always"
    boxed = {"w": nn.spmd.LogicallyPartitioned(jnp.ones((2, 2)), ("embed", "mlp"))}
    specs = nn.get_partition_spec(boxed)
    mesh = Mesh(jax.devices()[:1], ("data",))
    shardings = nn.logical_to_mesh_sharding(specs, mesh, [("embed", "data"), ("mlp", None)])
    for tree in (specs, shardings):
        assert not [leaf for leaf in jax.tree.leaves(tree) if isinstance(leaf, jax.Array)]

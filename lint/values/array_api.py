"""What array-library calls do to buffers, as tables (one place, documented).

The advice rules need three facts no signature tells:

* **fresh**: the call returns arrays in new buffers that nothing else holds
  (``jnp.zeros``, ``jax.random.normal``, ...).  A value made only of these,
  of arithmetic, and of jitted calls' results can be donated without
  deleting anything another name still reads.  ``jnp.asarray`` and
  ``jax.device_put`` are *not* fresh: given a jax array they may return it
  as it is (checked on jax 0.10.2).
* **host**: the call returns host NumPy data.  ``jit``/``pmap`` copy host
  arrays to the device and never delete them, so donating them frees
  nothing.
* **shape**: inside a jitted body, which calls keep their array operand's
  shape and dtype (an output of the same shape can take the donated
  buffer) and which change it (``jnp.concatenate``, ``reshape``,
  ``jax.image.resize``, a transpose): no output can take the buffer then.

Names are the import-resolved qualified names (``jax.numpy.zeros`` for
``jnp.zeros``), or method names on any receiver (``x.reshape``).
"""

from __future__ import annotations

import builtins

import libcst as cst

_JNP = "jax.numpy."

# Top-level packages of the libraries these tables describe: a capitalised name
# imported from one is a library class, a function imported from one no function
# of the project being checked.
KNOWN_LIBRARIES = frozenset({"jax", "flax", "optax", "equinox", "haiku", "chex", "orbax", "numpy", "ml_collections"})

FRESH_CONSTRUCTORS = frozenset(
    {_JNP + name for name in (
        "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
        "eye", "identity", "arange", "linspace", "logspace", "array", "copy", "tri",
    )}
    | {"jax.random." + name for name in (
        "normal", "uniform", "bernoulli", "categorical", "randint", "truncated_normal",
        "permutation", "choice", "gumbel", "laplace", "exponential", "gamma", "beta", "dirichlet",
        "multivariate_normal", "orthogonal", "rademacher", "ball", "cauchy", "logistic", "poisson",
        "PRNGKey", "key", "split", "fold_in",
    )}
    | {"jax.nn.initializers." + name for name in ("zeros", "ones", "normal", "uniform")}
)

# Calls that return host (NumPy) data; everything under ``numpy.`` counts too.
HOST_PRODUCERS = frozenset({"jax.device_get", "numpy.asarray", "numpy.array", "numpy.stack"})
HOST_ROOTS = frozenset({"numpy", "np"})
# Calls that put host data on the device: given NumPy data they return device
# arrays nothing else holds.  On the CPU backend (jax 0.10.2) the result may
# share the NumPy array's memory (``jnp.asarray(x, dtype=x.dtype)``, large
# aligned arrays), but a donated such buffer is only deleted, never written
# into: the NumPy array keeps its values (``tests/codemod/test_host_data_arguments_runs.py``).
# By the name of the parameter that takes the data.
DEVICE_COPIES = {"jax.numpy.asarray": "a", "jax.numpy.array": "object", "jax.device_put": "x"}

# tree_map spellings: ``tree_map(f, tree, *rest)`` keeps the trees' structure.
TREE_MAPS = frozenset({"jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map", "optax.tree_utils.tree_map_params"})

# Inside a jitted body: calls whose result has the shape and dtype of their
# array operands (so an output built by them can take a donated buffer).
SHAPE_PRESERVING = frozenset(
    TREE_MAPS
    # nnx's graph calls hold the very arrays of what they are given (flax 0.12.8)
    | {"flax.nnx.merge", "flax.nnx.state", "flax.nnx.split", "flax.nnx.graph.merge", "flax.nnx.graph.split"}
    | {"optax.apply_updates", "optax.incremental_update", "optax.safe_int32_increment"}
    | {_JNP + name for name in (
        "where", "clip", "maximum", "minimum", "abs", "exp", "log", "sqrt", "square", "tanh",
        "sign", "negative", "add", "subtract", "multiply", "divide", "power", "copy",
    )}
    | {"jax.lax.stop_gradient", "jax.lax.select", "jax.nn.relu", "jax.nn.sigmoid"}
    | {"jax.lax." + name for name in (  # collectives and constraints keep shape and dtype (jax 0.10.2)
        "pmean", "psum", "pmax", "pmin", "with_sharding_constraint", "optimization_barrier")}
)
# Loops whose result has the structure, shapes and dtypes of one argument
# (its position): the carry of ``fori_loop(lo, hi, body, init)``,
# ``while_loop(cond, body, init)``, ``scan(f, init, xs)`` (first of its pair).
CARRY_PRESERVING = {"jax.lax.fori_loop": 3, "jax.lax.while_loop": 2, "jax.lax.scan": 1}
CARRY_KEYWORDS = {"jax.lax.fori_loop": "init_val", "jax.lax.while_loop": "init_val", "jax.lax.scan": "init"}
# mujoco-mjx's pipeline functions ``f(m, d) -> Data``: the result has the
# structure, shapes and dtypes of ``d`` (checked on mujoco-mjx 3.17.0 with its
# JAX implementation, the default on CPU, GPU and TPU; each one run with ``d``
# donated by ``tests/lint/test_mjx_facts.py``).  Inputs a function never reads
# are dropped by jit and stay readable; the others are reused.
MJX_DATA_STEPS = frozenset(
    "mujoco.mjx." + name for name in (
        "step", "forward", "euler", "implicit", "rungekutta4", "inverse",
        "fwd_position", "fwd_velocity", "fwd_actuation", "fwd_acceleration",
        "kinematics", "collision", "com_pos", "com_vel", "crb", "factor_m", "make_constraint", "solve",
        "passive", "transmission", "tendon", "tendon_armature", "tendon_bias", "subtree_vel", "camlight",
        "rne_postconstraint", "sensor_pos", "sensor_vel", "sensor_acc",
    )
)
# Calls whose result has the structure, shapes and dtypes of one argument:
# ``(position, keyword)`` of that argument (the loops above, mjx's steps).
RESULT_OF_ARGUMENT: dict[str, tuple[int, str]] = {
    **{name: (position, CARRY_KEYWORDS[name]) for name, position in CARRY_PRESERVING.items()},
    **{name: (1, "d") for name in MJX_DATA_STEPS},
}
# jax's functional slice updates: the result has the shape and dtype of the operand
# (``(position, keyword)`` of it); the update goes in as a slice of it (jax 0.10.2).
UPDATED_OPERAND: dict[str, tuple[int, str]] = {
    "jax.lax." + name: (0, "operand")
    for name in ("dynamic_update_slice", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim")
}
# Method calls that return the receiver's structure updated (flax TrainState,
# dataclasses, NamedTuples, optax's ``tx.update`` returning the new state).
SHAPE_PRESERVING_METHODS = frozenset(
    {"apply_gradients", "apply_updates", "replace", "_replace", "update", "at", "set", "add"}
)

# jax's indexed updates, ``x.at[i].set(v)``: the result has ``x``'s shape and
# dtype; ``v`` is what goes in at ``i`` (a slice's shape, or broadcast to it).
INDEXED_UPDATE_METHODS = frozenset({"set", "add", "multiply", "mul", "divide", "power", "min", "max", "apply"})

# Calls whose result does not have their operand's shape or dtype.  Not a cast
# (``x.astype(t)``, ``jnp.astype``, ``lax.convert_element_type``): it keeps the shape,
# and the dtype too when ``x`` has ``t`` already (tpu-inference casts its state cache to
# float32 on the way into a kernel that aliases it), so an output may take the buffer:
# a cast is a call jaxmem does not know.
SHAPE_CHANGING = frozenset(
    {_JNP + name for name in (
        "concatenate", "stack", "hstack", "vstack", "reshape", "ravel", "transpose", "swapaxes",
        "moveaxis", "expand_dims", "squeeze", "pad", "tile", "repeat", "sum", "mean", "max", "min",
        "argmax", "argmin", "matmul", "dot", "einsum", "take", "broadcast_to",
    )}
    | {"jax.image.resize", "jax.image.scale_and_translate", "jax.lax.reshape", "jax.lax.transpose",
       "jax.lax.concatenate", "jax.lax.dynamic_slice", "jax.lax.slice"}
)
SHAPE_CHANGING_METHODS = frozenset(
    {"reshape", "ravel", "flatten", "transpose", "T", "sum", "mean", "max", "min", "squeeze", "swapaxes"}
)

# A parameter that only feeds these is a PRNG key: a few bytes, not worth donating.
PRNG_CONSUMERS_PREFIX = "jax.random."


def is_fresh_constructor(qualified: str | None, call=None) -> bool:
    """Whether a call of ``qualified`` (``call``, when given) returns new buffers
    nothing else holds.  ``jnp.array(x, copy=False)`` or ``copy=None`` hands back
    ``x`` itself when it is already an array (jax 0.10.2): not fresh."""
    if qualified not in FRESH_CONSTRUCTORS:
        return False
    return call is None or qualified != _JNP + "array" or _always_copies(call)


def _always_copies(call) -> bool:
    """Whether ``jnp.array(...)`` copies: ``copy`` left at its default or given as ``True``."""
    if any(arg.star for arg in call.args) or sum(arg.keyword is None for arg in call.args) > 2:
        return False  # jnp.array(x, dtype, copy): the flag by position
    return all(arg.keyword.value != "copy" or (isinstance(arg.value, cst.Name) and arg.value.value == "True")
               for arg in call.args if arg.keyword is not None)


def maps_to_new_arrays(function, resolve) -> bool:
    """Whether ``tree_map(function, tree)`` makes new leaves: ``function`` is a fresh
    constructor (``jnp.zeros_like``) or a lambda whose result is computed by an
    operator (``lambda x: x / 10.0``: jax operators return new arrays, jax 0.10.2),
    by indexing that adds or drops an axis (``lambda x: x[None]``), or made by a fresh
    constructor (``lambda x: jnp.zeros(x.shape, x.dtype)``);
    ``resolve`` gives an expression's qualified name."""
    if isinstance(function, cst.Lambda):
        body = function.body
        if isinstance(body, cst.Call):
            return is_fresh_constructor(resolve(body.func), body)
        if isinstance(body, cst.Subscript):
            return _changes_rank(body)
        return isinstance(body, (cst.BinaryOperation, cst.UnaryOperation))
    return is_fresh_constructor(resolve(function))


def _changes_rank(subscript: cst.Subscript) -> bool:
    """Whether indexing adds or drops an axis (``x[None]``, ``x[0]``, ``x[-1, ...]``): its result
    cannot be the array itself, which a trivial slice (``x[:]``, ``x[...]``, ``x[0:n]`` over all
    n rows) is (jax 0.10.2 hands ``x`` back)."""
    for element in subscript.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            continue
        value = index.value
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
            value = value.expression
        if isinstance(value, cst.Integer) or (isinstance(value, cst.Name) and value.value == "None"):
            return True
    return False


def is_host_producer(qualified: str | None) -> bool:
    """Whether a call of ``qualified`` returns host NumPy data."""
    if qualified is None:
        return False
    return qualified in HOST_PRODUCERS or qualified.split(".")[0] in HOST_ROOTS


# nnx's graph views: a Module, Variable or nnx.Rngs reached twice is in the result once
# (flax 0.12.8: a Parent whose right is its left splits into one State leaf), an array twice.
NNX_GRAPH_VIEWS = frozenset({"flax.nnx.split", "flax.nnx.state", "flax.nnx.graph.flatten",
                             "flax.nnx.graph.split", "flax.nnx.split_state"})

# Calls whose result is made of their argument's own arrays (views, not copies).
VIEWS_OF_ARGUMENTS = NNX_GRAPH_VIEWS | {
    "jax.tree_util.tree_flatten", "jax.tree_util.tree_leaves", "jax.tree.flatten", "jax.tree.leaves"}


def is_view_of_arguments(qualified: str | None) -> bool:
    """Whether a call of ``qualified`` returns its argument's arrays themselves."""
    return qualified in VIEWS_OF_ARGUMENTS


# ---------------------------------------------------------------------------
# What library calls do with their arguments.
#
# Each entry says what the result holds, with the version it was checked
# against; tests/lint/test_array_api_facts.py runs every entry under real JAX
# (buffer identity through ``unsafe_buffer_pointer()`` or ``is``).
#
# * NEW: the result is in new buffers; it shares none with the arguments.
# * HOLDS: the result holds its array arguments as they are (a container,
#   a dataclass, a view, or "maybe the same array": ``jnp.asarray``).
# * TWICE: the result holds its argument twice (donating it fails with
#   "Attempt to donate the same buffer twice").
# * PARTITION: HOLDS, split into disjoint parts (``a, b = nnx.split(m, F, G)``).
# * READS: the call only reads its arguments and keeps no reference.
#
# Anything not listed is unknown: it may return or keep its arguments.
# ---------------------------------------------------------------------------

NEW = "new"
HOLDS = "holds"
PARTITION = "partition"  # holds its argument's arrays, split into disjoint parts (one per element)
TWICE = "twice"
READS = "reads"

JAX, FLAX, OPTAX, EQX = "jax 0.10.2", "flax 0.12.8", "optax 0.2.8", "equinox 0.13.8"
FLASHBAX, MJX, BLACKJAX = "flashbax 0.1.3", "mujoco-mjx 3.17.0", "blackjax 1.7.1"

# blackjax sampling algorithms (``algo = blackjax.nuts(logdensity, step_size, imm)``),
# checked on blackjax 1.7.1 (``tests/lint/test_blackjax_facts.py``): ``algo.init(position)``
# (``ghmc``, ``mclmc``: ``init(position, rng_key)``) returns a state that holds
# ``position``'s arrays as they are, the rest new; ``algo.step(rng_key, state)`` returns
# ``(new_state, info)``, the new state with ``state``'s structure, shapes and dtypes.
BLACKJAX_ALGORITHMS = frozenset(
    "blackjax." + name for name in ("hmc", "nuts", "mala", "rmh", "normal_random_walk", "additive_step_random_walk",
                                    "barker_proposal", "ghmc", "mclmc")
)
# Their module-level ``init`` functions (``blackjax.nuts.init(position, logdensity_fn)``;
# ``normal_random_walk`` is a plain function): the state holds only the position.
BLACKJAX_INITS = frozenset(f"{name}.init" for name in BLACKJAX_ALGORITHMS if name != "blackjax.normal_random_walk")
CALL_EFFECTS: dict[str, tuple[str, str]] = {
    # new memory
    "copy.deepcopy": (NEW, JAX),  # jax.Array.__deepcopy__ copies the buffer
    _JNP + "copy": (NEW, JAX),
    _JNP + "zeros_like": (NEW, JAX),
    _JNP + "ones_like": (NEW, JAX),
    "optax.tree_utils.tree_zeros_like": (NEW, OPTAX),
    # copies to every local device: new buffers, none shared with the argument or within the result
    "flax.jax_utils.replicate": (NEW, FLAX),
    # held as they are
    "jax.device_put": (HOLDS, JAX),  # same device: returns the very same array
    _JNP + "asarray": (HOLDS, JAX),  # a jax array: returns it as it is
    "flax.training.train_state.TrainState.create": (HOLDS, FLAX),
    "flax.nnx.split": (PARTITION, FLAX),  # graphdef, then one State per filter: disjoint
    "flax.nnx.state": (HOLDS, FLAX),
    "flax.nnx.merge": (HOLDS, FLAX),  # the module rebuilt around the given State's very arrays
    # restore_checkpoint(dir, target): the target itself when there is no checkpoint, else new arrays
    "flax.training.checkpoints.restore_checkpoint": (HOLDS, FLAX),
    "flax.core.freeze": (HOLDS, FLAX),
    "flax.core.unfreeze": (HOLDS, FLAX),
    "flax.core.frozen_dict.freeze": (HOLDS, FLAX),
    "flax.core.frozen_dict.unfreeze": (HOLDS, FLAX),
    "equinox.partition": (PARTITION, EQX),  # (arrays, the rest): disjoint
    # pop(variables, "params"): (the rest, variables["params"]), the leaves as they are: disjoint
    "flax.core.pop": (PARTITION, FLAX),
    "flax.core.frozen_dict.pop": (PARTITION, FLAX),
    "flax.traverse_util.flatten_dict": (HOLDS, FLAX),  # each leaf once, as it is
    "flax.traverse_util.unflatten_dict": (HOLDS, FLAX),
    "equinox.combine": (HOLDS, EQX),
    "jax.tree_util.tree_leaves": (HOLDS, JAX),
    "jax.tree.leaves": (HOLDS, JAX),
    # map_params(opt, f, state): the state's non-parameter leaves as they are, f's results for the rest
    "optax.tree.map_params": (HOLDS, OPTAX),
    "optax.tree_utils.tree_map_params": (HOLDS, OPTAX),
    "dict": (HOLDS, "Python"),
    "tuple": (HOLDS, "Python"),
    "list": (HOLDS, "Python"),
    # copies of host MuJoCo structs (or new zeros): no buffer of the arguments,
    # none shared between the model and the data; only for the default
    # implementation (see MJX_MAKERS)
    "mujoco.mjx.put_model": (NEW, MJX),
    "mujoco.mjx.put_data": (NEW, MJX),
    "mujoco.mjx.make_data": (NEW, MJX),
    "mujoco.mjx.get_data": (READS, MJX),  # copies to a new host MjData, keeps nothing
    # the sampler's state holds the position as it is, the rest is new (see BLACKJAX_INITS)
    **{name: (HOLDS, BLACKJAX) for name in BLACKJAX_INITS},
    # the same tree twice
    "optax.LookaheadParams.init_synced": (TWICE, OPTAX),  # LookaheadParams(fast=p, slow=p)
    # only read
    "print": (READS, "Python"),
    "jax.block_until_ready": (READS, JAX),  # returns its argument, keeps nothing
    "jax.eval_shape": (READS, JAX),
    "jax.debug.print": (READS, JAX),
    "jax.debug.visualize_array_sharding": (READS, JAX),
    # Vault(experience_structure=state.experience): reads shapes and dtypes, keeps no array
    "flashbax.vault.Vault": (READS, FLASHBAX),
    "flashbax.vault.vault.Vault": (READS, FLASHBAX),
}
# mujoco-mjx's makers, with how many arguments they may take by position and
# still use the default (JAX) implementation: ``put_data(m, d)``, ``put_model(m)``,
# ``make_data(m)``.  Checked on mujoco-mjx 3.17.0 by buffer pointers over its
# test models (``tests/lint/test_mjx_facts.py``): the result shares no buffer
# with the host structs, with an mjx Model it is made from, or within itself.
# With another ``impl`` (Warp, C++) they are unknown.
MJX_MAKERS = {"mujoco.mjx.put_model": 1, "mujoco.mjx.put_data": 2, "mujoco.mjx.make_data": 1}
# Checkpoint savers that write synchronously: every array is on disk (or
# copied to the host) before they return, so they keep nothing.  Only when
# called without the keywords that hand the save to a background worker
# (an orbax AsyncCheckpointer, flax's legacy async or GDA manager), and with
# no more positional arguments than those before them.  Checked on flax 0.12.8
# (orbax-checkpoint 0.12.8): the default is ``ocp.Checkpointer(PyTreeCheckpointHandler())``.
SYNCHRONOUS_SAVERS: dict[str, int] = {  # name: positional arguments allowed
    "flax.training.checkpoints.save_checkpoint": 7,
    "flax.training.checkpoints.save_checkpoint_multiprocess": 7,
}
BACKGROUND_SAVE_KEYWORDS = frozenset({"async_manager", "gda_manager", "orbax_checkpointer"})


def saves_synchronously(qualified: str | None, call) -> bool:
    """Whether ``call`` is a checkpoint save that only reads its target: a
    synchronous saver given no background worker (see ``SYNCHRONOUS_SAVERS``)."""
    allowed = SYNCHRONOUS_SAVERS.get(qualified) if qualified is not None else None
    if allowed is None:
        return False
    positional = 0
    for arg in call.args:
        if arg.star:
            return False  # *args / **kwargs may name a background worker
        if arg.keyword is None:
            positional += 1
        elif arg.keyword.value in BACKGROUND_SAVE_KEYWORDS:
            return False
    return positional <= allowed


# Method names, on any receiver, with the same meaning.
METHOD_EFFECTS: dict[str, tuple[str, str]] = {
    "create": (HOLDS, FLAX),  # TrainState.create(params=p, ...) holds p's leaves
    "replace": (HOLDS, FLAX),  # struct.dataclass.replace: the fields not replaced are shared
    "_replace": (HOLDS, "Python"),  # NamedTuple
    "init_synced": (TWICE, OPTAX),
}
# Keywords a holding ``.create(...)`` stores as static fields, not as pytree
# leaves (flax TrainState: ``struct.field(pytree_node=False)``): donating the
# state never deletes what they hold.
STATIC_FIELDS = frozenset({"apply_fn", "tx"})
# Wrappers whose returned function only reads its arguments:
# ``hk.experimental.tabulate(step)(state, batch)``, ``jax.make_jaxpr(f)(x)``.
# They trace the function they are given and never run it on real arrays, so
# naming a jitted step there does not hand it on (checked on jax 0.10.2 and
# dm-haiku 0.0.17: a donating step tabulated, traced and shape-evaluated
# deletes no leaf; tests/codemod/test_fix_traced_step_runs.py runs the jax ones).
READING_WRAPPERS = frozenset(
    {"haiku.experimental.tabulate", "jax.make_jaxpr", "jax.eval_shape", "flax.linen.tabulate"}
)
# Transforms whose function, applied at once (``jax.vmap(f)(x)``), runs on
# tracers: ``f`` cannot keep ``x``'s arrays, and the transform keeps no argument.
TRACING_TRANSFORMS = frozenset(
    "jax." + name for name in ("vmap", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian",
                               "checkpoint", "remat")
)
# Functions that trace the callable handed to them (``lax.fori_loop(0, n, body_fn, x)``):
# it runs on tracers, where a donation does nothing.
TRACING_HIGHER_ORDER = frozenset(
    {"jax.lax." + name for name in ("fori_loop", "scan", "while_loop", "cond", "switch", "map", "associative_scan")}
    | {"jax." + name for name in ("vmap", "jit", "pmap", "checkpoint", "remat")}
)
# Of those, the ones that stage the callable into a jaxpr even when called eagerly
# (checked on jax 0.10.2: a donating jit called in the body, on the carry or on an
# array closed over, deletes neither).  Not ``associative_scan``: it calls the
# function on concrete arrays, which a donating jit then deletes.
STAGING_HIGHER_ORDER = frozenset(
    "jax.lax." + name for name in ("fori_loop", "scan", "while_loop", "cond", "switch", "map")
)
# Decorators that stage the whole body into a jaxpr whenever the function is
# called, eagerly too (checked on jax 0.10.2: an array closed over or made in a
# ``shard_map`` body and passed twice to a donating jit is never deleted).  Not
# vmap or grad: they bind a call with no traced input on the eager trace, which donates.
STAGING_DECORATORS = frozenset({"jax.shard_map", "jax.experimental.shard_map.shard_map"})
# optax transforms whose ``init(params)`` returns new buffers only (moments
# made by ``zeros_like``, counters, empty states), none held twice, and none of
# their hyperparameters either when given as arrays, checked on optax 0.2.8.
# Not lookahead or inject_hyperparams: they keep ``params`` (or a given array)
# in their state; not lbfgs: its state holds one new array in two places; not
# prodigy, cocob, dog, dowg or scale_by_distance_over_gradients: they keep
# ``params``; not schedule_free_* or dadapt_adamw: they keep ``b1`` or
# ``estim_lr0`` when it is an array (OPTAX_NEW_STATE_IF_ARRAY_FREE; wrappers:
# OPTAX_WRAPPERS).
OPTAX_NEW_STATE = frozenset(
    "optax." + name for name in (
        "adam", "adamw", "sgd", "rmsprop", "adagrad", "lamb", "lion", "adafactor", "nadam", "adabelief",
        "adamax", "novograd", "radam", "yogi", "fromage", "noisy_sgd",
        "clip_by_global_norm", "clip", "add_decayed_weights", "scale", "scale_by_adam",
        "scale_by_learning_rate", "scale_by_schedule", "scale_by_rms", "zero_nans", "trace", "ema",
        "identity", "chain", "adadelta", "amsgrad", "adan", "lars", "sm3", "rprop", "polyak_sgd",
        "optimistic_gradient_descent", "adamaxw", "nadamw", "sign_sgd",
        "scale_by_amsgrad", "scale_by_adadelta", "scale_by_lion", "scale_by_radam", "scale_by_trust_ratio",
        "scale_by_belief", "scale_by_novograd", "scale_by_optimistic_gradient", "scale_by_param_block_norm",
        "scale_by_param_block_rms", "scale_by_stddev", "scale_by_sm3", "scale_by_yogi", "scale_by_factored_rms",
        "scale_by_polyak", "scale_by_rprop", "scale_by_sign", "scale_by_adamax", "scale_by_adan",
        "centralize", "keep_params_nonnegative", "normalize_by_update_norm", "clip_by_block_rms",
        "contrib.muon", "contrib.sophia", "contrib.momo", "contrib.momo_adam", "contrib.ademamix",
        "contrib.simplified_ademamix", "contrib.adopt", "contrib.acprop", "contrib.reduce_on_plateau",
        "contrib.normalize",
    )
)
# optax wrappers whose ``init(params)`` state is their inner transforms' states
# plus new counters (checked on optax 0.2.8 by buffer pointers): they make new
# buffers only when every inner transform does.  Each maps to where its inner
# transforms are given, ``(keyword, position, form)``, ``form`` one of "one" (a
# transform), "mapping" (a dict literal of transforms) or "pairs" (``*args`` of
# ``(name, transform)`` tuples), and to the parameters (keyword: position) whose
# argument is refused: MultiSteps' ``should_skip_update_fn`` makes a state of its own choosing.
OPTAX_WRAPPERS: dict[str, tuple[tuple[str, int, str], dict[str, int]]] = {
    "optax.apply_if_finite": (("inner", 0, "one"), {}),
    "optax.masked": (("inner", 0, "one"), {}),
    "optax.conditionally_mask": (("inner", 0, "one"), {}),
    "optax.MultiSteps": (("opt", 0, "one"), {"should_skip_update_fn": 3}),
    "optax.multi_transform": (("transforms", 0, "mapping"), {}),
    "optax.partition": (("transforms", 0, "mapping"), {}),
    "optax.named_chain": (("", 0, "pairs"), {}),
}
# Transforms whose ``init`` makes new buffers only when no argument is an array
# (optax 0.2.8: schedule-free keeps ``jnp.asarray(b1)``, D-Adaptation
# ``estim_lr0``, each the very array when given one of the parameters' dtype);
# ``schedule_free(base, learning_rate)`` also needs a standard ``base``.
OPTAX_NEW_STATE_IF_ARRAY_FREE = frozenset({
    "optax.contrib.schedule_free_adamw", "optax.contrib.schedule_free_sgd", "optax.contrib.dadapt_adamw",
    "optax.contrib.schedule_free",
})
# ``optax.inject_hyperparams(factory)(**hyperparameters)``: standard when the
# factory is (a name of OPTAX_NEW_STATE, not a call) and no hyperparameter is
# an array (a strong-typed array is kept in the state as it is).
OPTAX_INJECT = frozenset({"optax.inject_hyperparams", "optax.schedules.inject_hyperparams"})

# flashbax replay-buffer factories, checked on flashbax 0.1.3 (each under
# ``tests/lint/test_array_api_facts.py``): the buffer holds functions only; its
# ``init(experience)`` returns new arrays (``empty_like``, broadcast), none of
# ``experience``'s; its ``add(state, batch)`` returns a state with the
# structure, shapes and dtypes of ``state``, so a donated state is reused whole.
# Not ``make_trajectory_queue``: a jitted ``add`` donating its state leaves
# some leaves undeleted.
FLASHBAX_BUFFERS = frozenset(
    prefix + name
    for name in ("flat_buffer", "item_buffer", "trajectory_buffer", "prioritised_flat_buffer",
                 "prioritised_item_buffer", "prioritised_trajectory_buffer")
    for prefix in ("flashbax.make_", "flashbax.buffers.make_", f"flashbax.buffers.{name}.make_")
)
# Methods that only read their arguments, by what made the receiver: nothing of
# them is kept after the call, nor returned (checked on flashbax 0.1.3 by
# buffer pointers; ``Vault.write`` finishes its writes before it returns).
READING_METHODS: dict[str, frozenset[str]] = {
    **{factory: frozenset({"sample", "can_sample"}) for factory in FLASHBAX_BUFFERS},
    "flashbax.vault.Vault": frozenset({"write"}),
    "flashbax.vault.vault.Vault": frozenset({"write"}),
}

# Standard-library functions that put what they are given into the container given as
# their first argument, where it stays after they return (Python 3.11:
# ``heapq.heappush(heap, (loss, i, params))``, ``bisect.insort(ranked, item)``,
# ``operator.setitem(table, key, value)``): like ``heap.append(item)``.
CONTAINER_FUNCTIONS = frozenset({
    "heapq.heappush", "heapq.heappushpop", "heapq.heapreplace", "bisect.insort", "bisect.insort_left",
    "bisect.insort_right", "operator.setitem",
})

# Standard-library functions that keep what they are given for later, out of the
# caller's sight (Python 3.11): an exit handler (``atexit.register(save, params)``),
# a finalizer, a thread or timer that runs its function on its arguments whenever it
# starts.  A value given to one is kept anywhere, as by a project function that may keep it.
KEEPING_FUNCTIONS = frozenset({
    "atexit.register", "weakref.finalize", "threading.Thread", "threading.Timer", "sys.addaudithook",
})

# Test-case classes whose ``assert...`` methods compare their arguments and keep
# none of them (checked on Python 3.11's unittest, absl-py 2.x, chex 0.1.92, and
# jax 0.10.2's ``JaxTestCase``: ``assertAllClose``, ``assertArraysEqual``...); the
# ones that call a callable they are given (assertRaises, assertWarns, assertLogs,
# JaxTestCase's assertCacheMisses) are left out by name where this table is used.
TEST_CASES = frozenset({
    "unittest.TestCase", "unittest.case.TestCase", "absl.testing.absltest.TestCase",
    "absl.testing.parameterized.TestCase", "chex.TestCase",
    "jax._src.test_util.JaxTestCase", "jax._src.test_util.BufferDonationTestCase",
})
# Assertion names that call a callable they are given, whatever the class.
CALLING_ASSERTIONS = ("Raises", "Warns", "Logs", "CacheMisses")

# optax transforms whose state holds no array when every argument is a number
# (``optax.sgd(0.02)`` without momentum: EmptyStates only), checked on optax 0.2.8;
# a schedule or momentum adds a count or a trace.
OPTAX_NO_STATE = frozenset(
    "optax." + name for name in ("sgd", "identity", "scale", "clip", "clip_by_global_norm",
                                 "add_decayed_weights", "chain")
)


def call_effect(qualified: str | None, method: str | None = None, call=None) -> str | None:
    """What a call does with its arguments: NEW, HOLDS, TWICE, READS, or None (unknown).

    ``qualified`` is the import-resolved callee; ``method`` the attribute name
    when the callee is ``receiver.method`` and cannot be resolved; ``call`` the
    call itself, needed for the entries that depend on its arguments (MJX_MAKERS)."""
    if qualified in MJX_MAKERS and not _default_mjx_call(call, MJX_MAKERS[qualified]):
        return None
    if qualified == _JNP + "asarray" and call is not None and _stacks_a_display(call):
        return NEW
    if qualified is not None and qualified in CALL_EFFECTS:
        return CALL_EFFECTS[qualified][0]
    if qualified is not None and qualified in FRESH_CONSTRUCTORS:
        return NEW if is_fresh_constructor(qualified, call) else HOLDS
    if qualified is not None and qualified.startswith(("logging.", "absl.logging.")):
        return READS
    if method is not None and method in METHOD_EFFECTS:
        return METHOD_EFFECTS[method][0]
    if qualified is not None and qualified.rsplit(".", 1)[-1] in METHOD_EFFECTS:
        return METHOD_EFFECTS[qualified.rsplit(".", 1)[-1]][0]
    return None


# Calls whose result is known not to hold one array in two places, though jaxmem
# does not know what it holds: an unknown call's result may (``npt_nose_hoover``'s
# init holds one new zero as two fields), so donating it as made is never high.
# Checked by buffer pointers on flax 0.12.8 (``tests/lint/test_array_api_facts.py``):
# ``nnx.Rngs(0)`` holds one key per stream; a flax.nnx layer (``nnx.Linear(2, 3,
# rngs=rngs)``) new parameters.  jax.numpy and jax.random functions return one
# array.  nnx's containers (``nnx.State``, ``nnx.List``...) hold what they are
# given, and ``nnx.Optimizer`` what its transform's ``init`` returns, so they are
# not listed (provenance proves a standard transform's optimizer new).
DISTINCT_RESULTS = frozenset({"flax.nnx.Rngs", "flax.nnx.rnglib.Rngs"})
_ONE_ARRAY_ROOTS = ("jax.numpy.", "jax.random.")
_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))
# they hold what they are given (an optimizer: what its transform's init returns)
_NNX_CONTAINERS = frozenset({"State", "Dict", "List", "Sequential", "Variable", "Param", "Optimizer",
                             "ModelAndOptimizer"})


MAP_PARAMS = frozenset({"optax.tree.map_params", "optax.tree_utils.tree_map_params"})


def mapped_trees(qualified: str | None, call) -> list | None:
    """The trees a tree map's result holds as they are (``jax.tree.map(lambda v: v, state)``,
    ``optax.tree.map_params(opt, lambda v: v, state)``: ``state``), when its function is a
    lambda that returns one of its parameters; None otherwise.  map_params uses its
    first argument (an optimizer) only for its structure."""
    first = 2 if qualified in MAP_PARAMS else 1 if qualified in TREE_MAPS else None
    if first is None or any(arg.star for arg in call.args):
        return None
    positional = [arg.value for arg in call.args if arg.keyword is None]
    if len(positional) <= first or not _returns_a_parameter(positional[first - 1]):
        return None
    return positional[first:]


def _returns_a_parameter(function) -> bool:
    """``lambda v: v``, ``lambda p, g: g``, ``lambda x: x.unbox() if boxed(x) else x``: a
    parameter, or a part of one (an attribute, a method called without arguments)."""
    if not isinstance(function, cst.Lambda):
        return False
    params = {param.name.value for param in function.params.params}

    def part(expr) -> bool:
        if isinstance(expr, cst.IfExp):
            return part(expr.body) and part(expr.orelse)
        if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute):
            return part(expr.func.value)
        if isinstance(expr, cst.Attribute):
            return part(expr.value)
        return isinstance(expr, cst.Name) and expr.value in params

    return part(function.body)


def returns_distinct_arrays(qualified: str | None) -> bool:
    """Whether a call of ``qualified`` (not in :data:`CALL_EFFECTS`) returns no array in
    two places: :data:`DISTINCT_RESULTS`, a ``flax.nnx`` class (a layer's parameters are
    new), or a jax.numpy/jax.random function (one array)."""
    if qualified is None:
        return False
    if qualified in _BUILTINS:
        return True  # sorted(xs), next(it), getattr(obj, "w"): one value, or a container it was given
    if qualified in DISTINCT_RESULTS or qualified.startswith(_ONE_ARRAY_ROOTS):
        return True
    name = qualified.rsplit(".", 1)[-1]
    return qualified.startswith("flax.nnx.") and name[:1].isupper() and name not in _NNX_CONTAINERS


def _stacks_a_display(call) -> bool:
    """``jnp.asarray([x] * n)``, ``jnp.asarray((a, b))``, ``jnp.asarray([f(v) for v in vs])``:
    given a list or tuple written out (or a repeat of one), ``jnp.asarray`` stacks its
    elements into one new array, never an array it was given (jax 0.10.2; the result
    has one more axis than any element)."""
    if not call.args or any(arg.star for arg in call.args) or call.args[0].keyword is not None:
        return False
    value = call.args[0].value
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        value = value.left if isinstance(value.left, (cst.List, cst.Tuple)) else value.right
    return isinstance(value, (cst.List, cst.Tuple, cst.ListComp)) and not any(
        isinstance(element, cst.StarredElement) for element in getattr(value, "elements", ()))


def _default_mjx_call(call, positional: int) -> bool:
    """Whether ``call`` (an mjx maker's) picks the default implementation: no ``impl``
    argument, by keyword or by position, and no ``*args``/``**kwargs``."""
    if call is None:
        return False
    args = call.args
    if any(arg.star for arg in args) or any(arg.keyword is not None and arg.keyword.value == "impl" for arg in args):
        return False
    return sum(arg.keyword is None for arg in args) <= positional


def is_constructor_like(call) -> bool:
    """``dict(...)``, ``tuple(...)``, ``State(...)``: a call that stores its arguments
    as they are (the builtin containers, or a capitalised name: a class,
    dataclass or NamedTuple; not an all-caps constant).  Used both for what a
    value holds (provenance) and for what reaches an output (usefulness)."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in ("dict", "tuple", "list") or (name[:1].isupper() and not name.isupper())


# Modules whose public lowercase attributes are functions, submodules or Python numbers, never
# device arrays (every one checked on jax 0.10.2, flax 0.12.8 and optax 0.2.8 in
# test_array_api_facts): a reference to one holds no array (``nnx.Sequential(nnx.Linear(...),
# nnx.relu)``, ``activation=jax.nn.gelu``).  Called, each says for itself (``jnp.ones(3)``).
FUNCTION_MODULES = frozenset({
    "jax.nn", "jax.nn.initializers", "jax.numpy", "jax.lax", "jax.random",
    "flax.nnx", "flax.nnx.initializers", "flax.linen", "flax.linen.initializers", "optax",
})

# Initializer makers: each returns a function of ``(key, shape, dtype)`` closing over its
# arguments (``kernel_init=nnx.initializers.lecun_normal()``); not ``zeros``/``ones``, which are
# initializers themselves and, called, make an array (jax 0.10.2, flax 0.12.8).
INITIALIZER_MAKERS = frozenset(
    f"{module}.{name}"
    for module in ("jax.nn.initializers", "flax.nnx.initializers", "flax.linen.initializers")
    for name in (
        "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
        "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "orthogonal",
        "truncated_normal", "uniform", "variance_scaling", "xavier_normal", "xavier_uniform",
        *(("zeros_init", "ones_init") if module != "jax.nn.initializers" else ()),
    )
)


# ---------------------------------------------------------------------------
# Values that hold no device arrays.  They never make a donated value
# "shared" and are never worth donating.  Proved by origin only: an unknown
# object is not array-free.
#
# * "always": the result holds no array whatever the arguments (``len(x)``,
#   ``int(x)``, ``jax.devices()``, a logger, a parser);
# * "if_args": no array if no argument holds one (``Mesh(devices, names)``,
#   ``ConfigDict({...})``, ``optax.adam(1e-3)``, ``Path(...)``);
# * "value": a module-level object that holds none (``absl.flags.FLAGS``).
# ---------------------------------------------------------------------------

ARRAY_FREE_CALLS: dict[str, str] = {
    **{name: "always" for name in (
        "len", "int", "float", "bool", "str", "repr", "hash", "id", "type", "isinstance", "range", "format",
        "jax.devices", "jax.local_devices", "jax.device_count", "jax.local_device_count",
        "jax.process_index", "jax.process_count", "jax.default_backend",
        "jax.experimental.mesh_utils.create_device_mesh", "jax.make_mesh",
        "time.time", "time.perf_counter", "time.monotonic",
        "logging.getLogger", "absl.logging.get_absl_logger", "argparse.ArgumentParser",
        "os.getcwd", "os.environ.get", "os.path.join", "os.path.dirname", "os.path.basename",
        "os.path.exists", "os.path.expanduser", "tempfile.mkdtemp",
        "numpy.prod",
        # flax's logical partitioning: PartitionSpecs and NamedShardings, no arrays (flax 0.12.8)
        "flax.linen.get_partition_spec", "flax.linen.logical_to_mesh_sharding", "flax.linen.logical_to_mesh",
        "flax.linen.spmd.get_partition_spec", "flax.linen.spmd.logical_to_mesh_sharding",
        "flax.linen.spmd.logical_to_mesh",
    )},
    **{name: "if_args" for name in ("min", "max", "abs", "round", "sum", "divmod", "pow")},  # of Python numbers
    **{name: "if_args" for name in (
        "pathlib.Path", "epath.Path", "etils.epath.Path",
        "ml_collections.ConfigDict", "ml_collections.config_dict.ConfigDict",
        "ml_collections.FrozenConfigDict", "ml_collections.config_dict.FrozenConfigDict",
        "jax.sharding.Mesh", "jax.sharding.NamedSharding", "jax.sharding.PartitionSpec",
        "jax.sharding.SingleDeviceSharding", "jax.experimental.maps.Mesh",
        "jax.NamedSharding", "jax.P",  # jax's top-level names of NamedSharding and PartitionSpec (jax 0.10.2)
        "jax.sharding.PositionalSharding",
        "functools.partial",  # of array-free parts
        # optax schedules: functions of the step count, closing over their arguments (optax 0.2.8)
        *(f"optax{module}.{name}" for module in ("", ".schedules") for name in (
            "constant_schedule", "linear_schedule", "cosine_decay_schedule", "warmup_cosine_decay_schedule",
            "exponential_decay", "polynomial_schedule", "piecewise_constant_schedule",
            "piecewise_interpolate_schedule", "cosine_onecycle_schedule", "linear_onecycle_schedule",
            "join_schedules", "warmup_exponential_decay_schedule", "sgdr_schedule", "warmup_constant_schedule")),
        *sorted(OPTAX_NEW_STATE),  # GradientTransformation: functions, no arrays
        *sorted(OPTAX_NEW_STATE_IF_ARRAY_FREE), *sorted(OPTAX_WRAPPERS),  # and of array-free parts
        *sorted(FLASHBAX_BUFFERS),  # a buffer: functions, no arrays
    )},
    **{name: "if_args" for name in INITIALIZER_MAKERS},
    "absl.flags.FLAGS": "value",
    # dtypes: ``jnp.float32`` as a value is a scalar type (called, it makes an array)
    **{f"{module}.{name}": "value" for module in ("jax.numpy", "numpy") for name in (
        "float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16",
        "uint32", "uint64", "bool_", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
    )},
}

# Attributes answered from the array's abstract value, never from its buffer
# (``x.shape[0]`` is an int).
METADATA_ATTRIBUTES = frozenset(
    {"shape", "dtype", "ndim", "size", "sharding", "nbytes", "aval", "weak_type", "itemsize"}
)


def library_function(qualified: str | None) -> bool:
    """Whether ``qualified`` names a public lowercase attribute of a module of
    :data:`FUNCTION_MODULES` (a function, a submodule or a number: no device array)."""
    if qualified is None:
        return False
    module, _, name = qualified.lstrip(".").rpartition(".")
    return module in FUNCTION_MODULES and name[:1].islower()


def array_free_call(qualified: str | None) -> str | None:
    """``"always"``, ``"if_args"``, ``"value"`` (see ARRAY_FREE_CALLS), or None when not known."""
    if qualified is None:
        return None
    return ARRAY_FREE_CALLS.get(qualified.lstrip("."))

# Annotations of parameters that hold no arrays (``config: ml_collections.ConfigDict``).
ARRAY_FREE_TYPES = frozenset({
    "int", "float", "bool", "str", "bytes", "None",
    "ml_collections.ConfigDict", "ml_collections.config_dict.ConfigDict",
    "ml_collections.FrozenConfigDict", "ml_collections.config_dict.FrozenConfigDict",
    "argparse.Namespace", "pathlib.Path", "epath.Path", "etils.epath.Path", "os.PathLike",
    "jax.sharding.Mesh", "jax.sharding.Sharding", "jax.sharding.NamedSharding", "jax.sharding.PartitionSpec",
    "jax.Device", "logging.Logger", "optax.GradientTransformation",
})

# Calls that make PRNG keys (a few bytes: never worth donating), and
# replicators that copy one to every device (``flax.jax_utils.replicate``).
PRNG_PRODUCERS = frozenset(
    "jax.random." + name for name in ("PRNGKey", "key", "split", "fold_in", "clone", "wrap_key_data")
)
REPLICATORS = frozenset({"flax.jax_utils.replicate", "jax.device_put_replicated"})


def is_prng_producer(qualified: str | None) -> bool:
    """Whether a call of ``qualified`` returns PRNG keys."""
    return qualified in PRNG_PRODUCERS

# Calls returning a tuple whose element at the given position is structure, not
# arrays: nnx's GraphDef (``graphdef, state = nnx.split(model)``), a treedef
# (``leaves, treedef = jax.tree_util.tree_flatten(x)``); checked on flax 0.12.8 / jax 0.10.2.
ARRAY_FREE_PARTS = {
    "flax.nnx.split": 0, "flax.nnx.graph.split": 0,
    "jax.tree_util.tree_flatten": 1, "jax.tree.flatten": 1,
}

# Pure-function pairs whose element at the given position is ``init``: its
# result is new parameters (``params_init, loss_fn = hk.transform(f)``),
# checked on dm-haiku 0.0.17 (init runs ``f`` and returns the parameters it creates).
INIT_APPLY_PAIRS = {
    "haiku.transform": 0, "haiku.transform_with_state": 0, "haiku.without_apply_rng": 0,
    "haiku.without_state": 0,
}

# jax-md's simulators and minimizers return ``(init_fn, apply_fn)``; checked on
# jax-md 0.2.29 by buffer pointers (``tests/lint/test_jax_md_facts.py`` runs each):
#
# * ``apply_fn(state, **kwargs)`` returns a state with the structure, shapes and
#   dtypes of ``state`` (it is written to be carried through ``lax.fori_loop``),
#   so a donated state is reused (see ``lint/callables/library_callables.py``);
# * ``init_fn(...)`` returns a state that may hold its arguments as they are
#   (brownian's holds the key and the positions, fire_descent's the positions)
#   and no buffer twice, except ``npt_nose_hoover``'s: one zero is both its box
#   position and its box momentum, so donating that state as made fails with
#   "Attempt to donate the same buffer twice".
JAX_MD_STEPPERS = frozenset(
    {"jax_md.simulate." + name for name in (
        "nve", "nvt_nose_hoover", "nvt_langevin", "brownian", "nvk", "npt_nose_hoover")}
    | {"jax_md.minimize." + name for name in ("fire_descent", "gradient_descent")}
)
JAX_MD_INIT_TWICE = frozenset({"jax_md.simulate.npt_nose_hoover"})

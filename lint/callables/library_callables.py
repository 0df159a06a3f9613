"""Library functions jitted directly, whose contract jaxmem knows without a body.

``update_fn = jax.jit(tx.update)`` (or ``opt_init, opt_update = optax.adam(lr)``
then ``jax.jit(opt_update)``): ``tx`` is an optax ``GradientTransformation``,
a pair of functions with a documented contract (checked on optax 0.2.8,
``tests/lint/test_array_api_facts.py`` runs it):

* ``update(updates, state, params=None, **extra_args)`` returns
  ``(new_updates, new_state)``: the new updates have the structure, shapes and
  dtypes of ``updates`` and the new state those of ``state``, so each can take
  its argument's buffers when donated;
* ``init(params)`` returns a new state.

``params`` may feed an output (weight decay adds it to the updates) or not:
whether donating it frees anything is unknown (``maybe``).

A flashbax buffer (``buffer = fbx.make_flat_buffer(...)``, any factory of
``FLASHBAX_BUFFERS``; checked on flashbax 0.1.3) is a dataclass of functions:
``jax.jit(buffer.add)`` takes ``(state, batch)`` and returns a state with the
structure, shapes and dtypes of ``state``; ``batch`` is written into it.

A blackjax sampling algorithm (``algo = blackjax.nuts(...)``, any of
``BLACKJAX_ALGORITHMS``; checked on blackjax 1.7.1): ``jax.jit(algo.step)``
takes ``(rng_key, state)`` and returns ``(new_state, info)``, the new state
with the structure, shapes and dtypes of ``state``.

mujoco-mjx's pipeline functions (``jax.jit(mjx.step)``, any of
``MJX_DATA_STEPS``; checked on mujoco-mjx 3.17.0) take ``(m, d)`` and return
a ``Data`` with the structure, shapes and dtypes of ``d``.

jax-md's simulators and minimizers (``init_fn, apply_fn = simulate.nve(energy_fn,
shift, dt)``, any of ``JAX_MD_STEPPERS``; checked on jax-md 0.2.29):
``jax.jit(apply_fn)`` takes ``(state, **kwargs)`` and returns a state with the
structure, shapes and dtypes of ``state``.

The functions unpacked from a pair may be jitted in place
(``opt_update = jax.jit(opt_update)``, ``step_fn = jit(step_fn)``).

Anything else jitted without a visible body stays unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.signatures import POSITIONAL, VAR_KEYWORD, Param, Signature
from jaxmem.lint.values.array_api import BLACKJAX_ALGORITHMS, FLASHBAX_BUFFERS, JAX_MD_STEPPERS, MJX_DATA_STEPS
from jaxmem.lint.values.usefulness import MAYBE, PRESERVED

# optax namespaces whose calls return no GradientTransformation (trees, losses, projections).
_NOT_TRANSFORMS = ("optax.tree", "optax.tree_utils", "optax.losses", "optax.projections",
                   "optax.apply_updates", "optax.incremental_update")


@dataclass(frozen=True)
class KnownCallable:
    """A library function's signature and what its outputs are built from."""

    signature: Signature
    outputs: tuple[tuple[str, str], ...]  # parameter -> usefulness verdict
    parts: tuple[frozenset[str], ...]  # per returned part, the parameters it preserves


_OPTAX_UPDATE = KnownCallable(
    signature=Signature((Param("updates", POSITIONAL), Param("state", POSITIONAL),
                         Param("params", POSITIONAL, True), Param("extra_args", VAR_KEYWORD))),
    outputs=(("updates", PRESERVED), ("state", PRESERVED), ("params", MAYBE)),
    parts=(frozenset({"updates"}), frozenset({"state"})),
)
_OPTAX_INIT = KnownCallable(
    signature=Signature((Param("params", POSITIONAL),)),
    outputs=(("params", MAYBE),),
    parts=(frozenset(),),
)
# Position of each function in the GradientTransformation NamedTuple, (init, update).
_OPTAX_METHODS = {"init": _OPTAX_INIT, "update": _OPTAX_UPDATE}
_OPTAX_FIELDS = ("init", "update")
_FLASHBAX_METHODS = {
    "add": KnownCallable(
        signature=Signature((Param("state", POSITIONAL), Param("batch", POSITIONAL))),
        outputs=(("state", PRESERVED), ("batch", MAYBE)),
        parts=(frozenset({"state"}),),
    ),
}
_BLACKJAX_METHODS = {
    "step": KnownCallable(
        signature=Signature((Param("rng_key", POSITIONAL), Param("state", POSITIONAL))),
        outputs=(("rng_key", MAYBE), ("state", PRESERVED)),
        parts=(frozenset({"state"}), frozenset()),
    ),
}

_MJX_STEP = KnownCallable(
    signature=Signature((Param("m", POSITIONAL), Param("d", POSITIONAL))),
    outputs=(("m", MAYBE), ("d", PRESERVED)),
    parts=(frozenset({"d"}),),
)

_JAX_MD_APPLY = KnownCallable(
    signature=Signature((Param("state", POSITIONAL), Param("kwargs", VAR_KEYWORD))),
    outputs=(("state", PRESERVED),),
    parts=(frozenset({"state"}),),
)


def library_function(qualified: str | None) -> KnownCallable | None:
    """The contract of a library function jitted by its import-resolved name
    (``jax.jit(mjx.step)``); None when unknown."""
    return _MJX_STEP if qualified in MJX_DATA_STEPS else None


def vmapped(known: KnownCallable, vmap: cst.Call) -> KnownCallable | None:
    """The contract of ``jax.vmap(f, in_axes=..., out_axes=...)`` for a function ``f`` of
    contract ``known``: a parameter mapped on axis 0, with outputs on axis 0, keeps
    its verdict (its output is batched the same way); an unmapped one (``None``)
    only broadcasts into outputs of another shape.  None when the axes are not
    literals this reads (``in_axes=(None, 0)``, ``in_axes=0``)."""
    params = known.signature.positional
    options = {arg.keyword.value: arg.value for arg in vmap.args[1:] if arg.keyword is not None}
    if any(arg.keyword is None or arg.star for arg in vmap.args[1:]) or set(options) - {"in_axes", "out_axes"}:
        return None  # axes by position, **options or other options (axis_name, spmd_axis_name...)
    if "out_axes" in options and _axis(options["out_axes"]) != 0:
        return None
    in_axes = options.get("in_axes", cst.Integer("0"))
    if isinstance(in_axes, cst.Tuple) and len(in_axes.elements) == len(params):
        axes = [_axis(element.value) for element in in_axes.elements]
    else:
        axes = [_axis(in_axes)] * len(params)
    if any(axis not in (0, None) for axis in axes) or all(axis is None for axis in axes):
        return None
    unmapped = {param.name for param, axis in zip(params, axes) if axis is None}
    return KnownCallable(
        signature=known.signature,
        outputs=tuple((name, MAYBE if name in unmapped and verdict == PRESERVED else verdict)
                      for name, verdict in known.outputs),
        parts=tuple(part - unmapped for part in known.parts),
    )


def _axis(node) -> int | None | str:
    """``0`` -> 0, ``None`` -> None; anything else -> "unknown"."""
    if isinstance(node, cst.Name) and node.value == "None":
        return None
    if isinstance(node, cst.Integer):
        return int(node.value)
    return "unknown"


def makes_optax_transform(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """Whether ``value`` is a call that returns an optax transform: ``optax.adam(1e-3)``,
    ``optax.chain(...)``, ``optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)``."""
    while isinstance(value, cst.Call):
        qualified = imports.resolve(value.func)
        if qualified is not None:
            return qualified.startswith("optax.") and not qualified.startswith(_NOT_TRANSFORMS)
        value = value.func
    return False


def optax_method(name: str) -> KnownCallable | None:
    """The contract of ``GradientTransformation.<name>`` (``init`` or ``update``)."""
    return _OPTAX_METHODS.get(name)


def makes_flashbax_buffer(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """Whether ``value`` is a call of a flashbax buffer factory: ``fbx.make_flat_buffer(...)``."""
    return isinstance(value, cst.Call) and imports.resolve(value.func) in FLASHBAX_BUFFERS


def makes_blackjax_algorithm(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """Whether ``value`` is a call of a blackjax sampling algorithm: ``blackjax.nuts(logdensity, ...)``."""
    return isinstance(value, cst.Call) and imports.resolve(value.func) in BLACKJAX_ALGORITHMS


def library_method(value: cst.BaseExpression | None, name: str, imports: ImportTable) -> KnownCallable | None:
    """The contract of ``obj.<name>`` where ``obj`` is made by ``value``: an optax
    transform's ``init``/``update``, a flashbax buffer's ``add``, a blackjax
    algorithm's ``step``; None when unknown."""
    if makes_optax_transform(value, imports):
        return optax_method(name)
    if makes_flashbax_buffer(value, imports):
        return _FLASHBAX_METHODS.get(name)
    if makes_blackjax_algorithm(value, imports):
        return _BLACKJAX_METHODS.get(name)
    return None


def optax_field(position: int, targets: int) -> KnownCallable | None:
    """The function a tuple target gets from unpacking a transform:
    ``opt_init, opt_update = optax.adam(lr)`` (two targets, in field order)."""
    if targets != len(_OPTAX_FIELDS) or not 0 <= position < targets:
        return None
    return _OPTAX_METHODS[_OPTAX_FIELDS[position]]


def pair_field(value: cst.BaseExpression, position: int, targets: int, imports: ImportTable) -> KnownCallable | None:
    """The contract of the function a tuple target gets from unpacking ``value``:
    an optax transform's ``init``/``update``, a jax-md simulator's ``apply_fn``
    (``init_fn, apply_fn = simulate.nve(energy_fn, shift, dt)``); None when unknown."""
    if makes_optax_transform(value, imports):
        return optax_field(position, targets)
    if (targets == 2 and position == 1 and isinstance(value, cst.Call)
            and imports.resolve(value.func) in JAX_MD_STEPPERS):
        return _JAX_MD_APPLY
    return None


def unpacked_from(body, name: str) -> tuple[cst.BaseExpression, int, int] | None:
    """``(value, position, number of targets)`` when ``name`` is assigned once in
    ``body``'s top-level statements, by unpacking a tuple (``a, b = value``)."""
    return unpacked_in((small for stmt in body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body),
                       name)


def unpacked_in(smalls, name: str) -> tuple[cst.BaseExpression, int, int] | None:
    """As :func:`unpacked_from`, over small statements."""
    return unpacked_all(smalls).get(name)


def unpacked_all(smalls) -> dict[str, tuple[cst.BaseExpression, int, int] | None]:
    """Each name the small statements ``smalls`` bind -> ``(value, position, number of
    targets)`` when it is bound once, by unpacking, and None when otherwise too
    (assigned again, augmented, annotated); one pass for every name, so a module
    is read once however many names are asked."""
    found: dict[str, tuple] = {}
    refused: set[str] = set()
    for small in smalls:
        if isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            names = _names(small.target)
            if len(names) == 1:
                refused.add(names[0])
            continue
        if not isinstance(small, cst.Assign):
            continue
        for target in small.targets:
            names = _names(target.target)
            unpacking = isinstance(target.target, (cst.Tuple, cst.List))
            for name in dict.fromkeys(names):
                if name in refused:
                    continue
                if name in found or names.count(name) > 1 or not unpacking:
                    refused.add(name)  # assigned twice, or not by unpacking
                else:
                    found[name] = (small.value, names.index(name), len(names))
    return {name: None if name in refused else value for name, value in found.items()}


def transform_updates(body, imports: ImportTable) -> frozenset[str]:
    """Names ``body``'s top-level statements bind, once, to an optax transform's
    ``update`` by unpacking (``opt_init, opt_update = optax.adam(lr)``)."""
    names = set()
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, (cst.Tuple, cst.List))):
                continue
            targets = _names(small.targets[0].target)
            if (len(targets) == len(_OPTAX_FIELDS) and targets[1] not in ("", "*")
                    and makes_optax_transform(small.value, imports)):
                found = unpacked_from(body, targets[1])
                if found is not None and found[0] is small.value:
                    names.add(targets[1])
    return frozenset(names)


def _names(target) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return ["*" if isinstance(e, cst.StarredElement) else e.value.value if isinstance(e.value, cst.Name) else ""
                for e in target.elements]
    return [""]

"""Turn what the user passed to ``verify`` into two compilable variants.

A target is the undecorated function plus a way to wrap it with and without
the donation.  What jax 0.10.2 exposes for already-transformed functions:

* ``jax.jit(f, ...)`` returns a ``jaxlib._jax.PjitFunction`` with ``_fun``
  (the Python function) and ``_jit_info`` (a ``PjitInfo`` holding
  ``static_argnums``, ``static_argnames``, ``donate_argnums`` and
  ``donate_argnames`` already normalised, ``keep_unused`` and the shardings);
* ``jax.pmap(f, ...)`` returns a plain Python function with ``lower`` and
  ``__wrapped__``; its options live only in the closure of ``lower``
  (``infer_params``: ``axis_name``, ``in_axes``, ``donate_tuple``, ...).

* ``nnx.jit`` and ``eqx.filter_jit`` objects hold an inner ``jax.jit``
  (see :mod:`jaxmem.runtime_check.library_jits`); they are verified through it.

Bound methods and ``functools.partial`` objects over any of these are
split into the function and its bound leading arguments (:func:`split_bound`).
"""

from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass, replace
from typing import Any, Callable

from jaxmem.runtime_check.library_jits import inner_jit, library_kind


@dataclass(frozen=True)
class Target:
    """The function to verify and the variants to compile."""

    function: Callable
    kind: str  # "jit" or "pmap" or "custom"
    donate_argnums: tuple[int, ...]
    donate_argnames: tuple[str, ...]
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]
    build: Callable[[bool], Callable]  # build(donate) -> transformed function
    wrapper: Callable | None = None  # the transform when it is not plain jax.jit (picklable)
    in_axes: Any = 0  # pmap only: which axis of each argument is mapped over devices
    explicit_donation: bool = False  # donate_argnums/argnames given to verify, not declared
    donation_label: str | None = None  # how the donation reads when it is not by position (equinox)

    @property
    def qualname(self) -> str:
        """``module.Qual.name`` of the undecorated function."""
        module = getattr(self.function, "__module__", None) or "?"
        return f"{module}.{getattr(self.function, '__qualname__', repr(self.function))}"


def _as_tuple(value) -> tuple:
    # 0 is a valid position: test for None, never for falsiness.
    if value is None:
        return ()
    if isinstance(value, (int, str)):
        return (value,)
    return tuple(value)


def is_jitted(fn) -> bool:
    """Whether ``fn`` is the result of ``jax.jit``."""
    return hasattr(fn, "_jit_info") and hasattr(fn, "_fun")


def pmap_options(fn) -> dict | None:
    """The keyword arguments ``jax.pmap`` was called with, read from its closure."""
    lower = getattr(fn, "lower", None)
    if lower is None or not hasattr(fn, "__wrapped__") or not getattr(lower, "__closure__", None):
        return None
    for cell in lower.__closure__:
        contents = cell.cell_contents
        if callable(contents) and getattr(contents, "__name__", "") == "infer_params":
            found = inspect.getclosurevars(contents).nonlocals
            if "donate_tuple" in found and "axis_name" in found:
                return found
    return None


def _unspecified(sharding) -> bool:
    return type(sharding).__name__ == "UnspecifiedValue"


def jit_target(fn, donate_argnums=None, donate_argnames=None, static_argnums=None, static_argnames=None) -> Target:
    """The target of a `jax.jit` result (its declared options unless given)."""
    import jax

    info = fn._jit_info
    static_nums = _as_tuple(static_argnums) if static_argnums is not None else tuple(info.static_argnums)
    static_names = _as_tuple(static_argnames) if static_argnames is not None else tuple(info.static_argnames)
    if donate_argnums is None and donate_argnames is None:
        nums, names = tuple(info.donate_argnums), tuple(info.donate_argnames)
    else:
        nums, names = _as_tuple(donate_argnums), _as_tuple(donate_argnames)
    options: dict[str, Any] = {"keep_unused": info.keep_unused}
    if info.user_specified_in_shardings:
        options["in_shardings"] = jax.tree_util.tree_unflatten(
            info.in_shardings_treedef, info.in_shardings_leaves)
    if not all(_unspecified(s) for s in info.out_shardings_leaves):
        options["out_shardings"] = jax.tree_util.tree_unflatten(
            info.out_shardings_treedef, info.out_shardings_leaves)
    explicit = donate_argnums is not None or donate_argnames is not None
    return replace(_plain_target(fn._fun, "jit", nums, names, static_nums, static_names, options=options),
                   explicit_donation=explicit)


def _pmap_target(fn, options: dict, donate_argnums) -> Target:
    import jax

    nums = _as_tuple(donate_argnums) if donate_argnums is not None else tuple(options["donate_tuple"])
    out_axes = jax.tree_util.tree_unflatten(options["out_axes_tree"], options["out_axes_flat"])
    statics = tuple(options["static_broadcasted_tuple"])

    def build(donate: bool):
        return jax.pmap(
            fn.__wrapped__, options["axis_name"], in_axes=options["in_axes"], out_axes=out_axes,
            static_broadcasted_argnums=statics, devices=options["devices"],
            backend=options["backend"], axis_size=options["axis_size"],
            donate_argnums=nums if donate else (),
        )

    wrapper = functools.partial(
        jax.pmap, axis_name=options["axis_name"], in_axes=options["in_axes"], out_axes=out_axes,
        static_broadcasted_argnums=statics, devices=options["devices"], backend=options["backend"],
        axis_size=options["axis_size"])
    return Target(fn.__wrapped__, "pmap", nums, (), statics, (), build, wrapper, in_axes=options["in_axes"],
                  explicit_donation=donate_argnums is not None)


def _plain_target(fn, kind, nums, names, static_nums, static_names, wrapper=None,
                  options=None) -> Target:
    import jax

    options = dict(options or {})

    def build(donate: bool):
        transform = wrapper or jax.jit
        kwargs = dict(options)
        if static_nums:
            kwargs["static_argnums"] = static_nums
        if static_names:
            kwargs["static_argnames"] = static_names
        if donate:
            if nums:
                kwargs["donate_argnums"] = nums
            if names:
                kwargs["donate_argnames"] = names
        return transform(fn, **kwargs)

    return Target(fn, kind, tuple(nums), tuple(names), tuple(static_nums), tuple(static_names), build, wrapper)


def resolve_target(fn, *, donate_argnums=None, donate_argnames=None, static_argnums=None,
                   static_argnames=None, wrapper=None) -> Target:
    """Build the :class:`Target` for a plain, jitted or pmapped ``fn``.

    An explicit ``donate_argnums``/``donate_argnames`` replaces the donation
    a jitted function declares; without them the declared one is verified.
    """
    fn = getattr(fn, "__jaxmem_transformed__", fn)  # a function jaxmem record/run wrapped
    if wrapper is not None:
        return _require_donation(_wrapper_target(fn, wrapper, donate_argnums, donate_argnames,
                                                 static_argnums, static_argnames), fn)
    if library_kind(fn) is not None:
        return _require_donation(_library_target(fn, donate_argnums, donate_argnames), fn)
    if is_jitted(fn):
        return _require_donation(
            jit_target(fn, donate_argnums, donate_argnames, static_argnums, static_argnames), fn)
    options = pmap_options(fn)
    if options is not None:
        if donate_argnames:
            raise TypeError("jax.pmap has no donate_argnames; pass donate_argnums (positions) instead")
        return _require_donation(_pmap_target(fn, options, donate_argnums), fn)
    if hasattr(fn, "lower") or not callable(fn):
        raise TypeError(
            f"cannot verify {fn!r}: it is neither a plain function nor the result of jax.jit, jax.pmap, "
            "nnx.jit or eqx.filter_jit; pass the undecorated function and wrapper=<the transform>, "
            "e.g. wrapper=functools.partial(jax.pmap, axis_name='i')")
    return _require_donation(_plain_target(
        fn, "jit", _as_tuple(donate_argnums), _as_tuple(donate_argnames),
        _as_tuple(static_argnums), _as_tuple(static_argnames)), fn)


def _require_donation(target: Target, fn) -> Target:
    nothing = target.donation_label == _EQX_DONATION[(False, False)]
    if nothing or (not target.donate_argnums and not target.donate_argnames and target.kind != "eqx"):
        raise ValueError(
            f"nothing to verify for {getattr(fn, '__qualname__', fn)!r}: it donates no argument; "
            "give the donation to check (donate_argnums=... or donate_argnames=...)")
    return target


def _is_pmap_wrapper(wrapper) -> bool:
    """Whether ``wrapper`` is ``jax.pmap`` or a partial of it (patched by record/run or not)."""
    import jax

    transform = getattr(wrapper, "func", wrapper)
    original = getattr(jax.pmap, "__jaxmem_original__", jax.pmap)
    return getattr(transform, "__jaxmem_original__", transform) is original


def _wrapper_target(fn, wrapper, donate_argnums, donate_argnames, static_argnums, static_argnames) -> Target:
    module = getattr(getattr(wrapper, "func", wrapper), "__module__", "") or ""
    if module.startswith("equinox"):
        raise TypeError(
            "wrapper=eqx.filter_jit cannot be given donate_argnums (equinox donates by mode, "
            "donate='all'/'all-except-first'/...); pass the eqx.filter_jit(fn, donate=...) object itself "
            "to verify(...)")
    inner = fn._fun if is_jitted(fn) else getattr(fn, "__wrapped__", fn)
    inner = getattr(fn, "fun", inner) if library_kind(fn) == "nnx" else inner
    target = _plain_target(inner, "custom", _as_tuple(donate_argnums), _as_tuple(donate_argnames),
                           _as_tuple(static_argnums), _as_tuple(static_argnames), wrapper=wrapper)
    if _is_pmap_wrapper(wrapper):
        keywords = getattr(wrapper, "keywords", {}) or {}
        return replace(target, kind="pmap", in_axes=keywords.get("in_axes", 0), explicit_donation=True)
    return replace(target, explicit_donation=True)


_EQX_DONATION = {
    (True, True): "eqx.filter_jit(donate='all'): every array argument",
    (False, True): "eqx.filter_jit(donate='all-except-first'): every array argument but the first",
    (True, False): "eqx.filter_jit: the first argument's arrays",
    (False, False): "eqx.filter_jit(donate='none'): nothing",
}


def _library_target(fn, donate_argnums, donate_argnames) -> Target:
    """An ``nnx.jit``/``eqx.filter_jit`` object: its inner jit is compiled (see verifier)."""
    kind = library_kind(fn)
    inner = inner_jit(fn)
    explicit = donate_argnums is not None or donate_argnames is not None
    if kind == "eqx" and explicit:
        raise TypeError("eqx.filter_jit donates by mode (donate='all', 'all-except-first', ...), not by "
                        "position: build the eqx.filter_jit object with the donation to check and pass it "
                        "without donate_argnums/donate_argnames")
    info = inner._jit_info
    nums = _as_tuple(donate_argnums) if explicit else tuple(info.donate_argnums)
    names = _as_tuple(donate_argnames) if explicit else tuple(info.donate_argnames)
    function = getattr(fn, "fun", None) if kind == "nnx" else getattr(fn, "__wrapped__", None)
    label = None
    if kind == "eqx":
        nums, names = (), ()
        label = _EQX_DONATION[(fn.donate_first, fn.donate_rest)]
    return Target(function or inner._fun, kind, nums, names, (), (), lambda donate: fn,
                  explicit_donation=explicit, donation_label=label)


def split_bound(fn, args: tuple) -> tuple[Any, tuple]:
    """``(function, args)`` with a bound method's instance (or a partial's arguments) moved into ``args``.

    ``obj.step`` where ``step`` is a jitted method is a bound method (or a
    ``functools.partial`` for nnx, an ``eqx.Partial`` for equinox) whose
    function takes the instance as its first argument.
    """
    while True:
        if isinstance(fn, types.MethodType) and _is_transformed(fn.__func__):
            fn, args = fn.__func__, (fn.__self__, *args)
        elif (hasattr(fn, "func") and isinstance(getattr(fn, "args", None), tuple)
              and not getattr(fn, "keywords", None) and _is_transformed(fn.func)):
            fn, args = fn.func, (*fn.args, *args)
        else:
            return fn, args


def _is_transformed(fn) -> bool:
    fn = getattr(fn, "__jaxmem_transformed__", fn)
    return is_jitted(fn) or library_kind(fn) is not None or pmap_options(fn) is not None

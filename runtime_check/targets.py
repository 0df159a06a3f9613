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

Anything else (``nnx.jit``, ``eqx.filter_jit`` objects) is verified by
passing the plain function and ``wrapper=`` explicitly.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable


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

    @property
    def qualname(self) -> str:
        """``module.Qual.name`` of the undecorated function."""
        module = getattr(self.function, "__module__", None) or "?"
        return f"{module}.{getattr(self.function, '__qualname__', repr(self.function))}"


def _as_tuple(value) -> tuple:
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


def _jit_target(fn, donate_argnums, donate_argnames, static_argnums, static_argnames) -> Target:
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
    return _plain_target(fn._fun, "jit", nums, names, static_nums, static_names, options=options)


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
    return Target(fn.__wrapped__, "pmap", nums, (), statics, (), build, wrapper)


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
    if wrapper is not None:
        inner = fn._fun if is_jitted(fn) else getattr(fn, "__wrapped__", fn)
        return _require_donation(_plain_target(
            inner, "custom", _as_tuple(donate_argnums), _as_tuple(donate_argnames),
            _as_tuple(static_argnums), _as_tuple(static_argnames), wrapper=wrapper), fn)
    if is_jitted(fn):
        return _require_donation(
            _jit_target(fn, donate_argnums, donate_argnames, static_argnums, static_argnames), fn)
    options = pmap_options(fn)
    if options is not None:
        if donate_argnames:
            raise TypeError("jax.pmap has no donate_argnames; pass donate_argnums (positions) instead")
        return _require_donation(_pmap_target(fn, options, donate_argnums), fn)
    if hasattr(fn, "lower") or not callable(fn):
        raise TypeError(
            f"cannot verify {fn!r}: it is neither a plain function, a jax.jit nor a jax.pmap "
            "result; pass the undecorated function and wrapper=<the transform>, "
            "e.g. wrapper=functools.partial(jax.pmap, axis_name='i')")
    return _require_donation(_plain_target(
        fn, "jit", _as_tuple(donate_argnums), _as_tuple(donate_argnames),
        _as_tuple(static_argnums), _as_tuple(static_argnames)), fn)


def _require_donation(target: Target, fn) -> Target:
    if not target.donate_argnums and not target.donate_argnames:
        raise ValueError(
            f"nothing to verify for {getattr(fn, '__qualname__', fn)!r}: it donates no argument; "
            "pass donate_argnums=... or donate_argnames=... to verify(...)")
    return target

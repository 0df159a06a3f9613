"""Reach the ``jax.jit`` inside ``nnx.jit`` and ``eqx.filter_jit`` objects.

Both libraries turn the user's arguments (nnx Modules and Optimizers,
equinox Modules with static fields) into pure pytrees and call one inner
``jax.jit`` function with them (flax 0.12.8, equinox 0.13.8):

* ``nnx.jit`` returns a ``JitWrapped``/``SimpleJitWrapped`` whose
  ``jitted_fn`` is the inner jit; its ``lower`` converts the arguments
  (inside nnx's update context, which the inner lowering needs) and calls
  ``jitted_fn.lower(*pure_args, **pure_kwargs)``.  Donation positions are
  the user's.
* ``eqx.filter_jit`` returns a ``_JitWrapper`` module whose ``_cached`` is
  the inner jit over ``(dynamic_donate, dynamic_nodonate, static)``; its
  ``lower`` calls ``_cached.lower(...)``.

:func:`inner_call` swaps the inner jit for a stand-in for the duration of
one ``lower`` call, so the library converts the arguments its own way and
the stand-in runs ``action(inner_jit, pure_args, pure_kwargs)`` in the
library's context.  Nothing is executed.
"""

from __future__ import annotations

from typing import Any, Callable


def _is_jitted(fn) -> bool:
    return hasattr(fn, "_jit_info") and hasattr(fn, "_fun")


def library_kind(obj) -> str | None:
    """``"nnx"`` or ``"eqx"`` for a jit object of those libraries, else None."""
    if _is_jitted(getattr(obj, "jitted_fn", None)) and hasattr(obj, "lower"):
        return "nnx"
    if _is_jitted(getattr(obj, "_cached", None)) and hasattr(obj, "_signature") and hasattr(obj, "lower"):
        return "eqx"
    return None


_INNER_ATTRIBUTE = {"nnx": "jitted_fn", "eqx": "_cached"}


class _Finished(Exception):
    """Carries the action's result out of the library's ``lower``."""

    def __init__(self, result):
        super().__init__("jaxmem: inner jit reached")
        self.result = result


class _InnerStandIn:
    def __init__(self, real, action: Callable):
        self._real = real
        self._action = action

    def lower(self, *args, **kwargs):
        raise _Finished(self._action(self._real, args, kwargs))

    __call__ = lower

    def __getattr__(self, name):
        return getattr(self._real, name)


def inner_jit(obj):
    """The ``jax.jit`` function inside a library jit object."""
    return getattr(obj, _INNER_ATTRIBUTE[library_kind(obj)])


def inner_call(obj, args: tuple, kwargs: dict, action: Callable[[Any, tuple, dict], Any]):
    """Run ``action(inner_jit, pure_args, pure_kwargs)`` where ``obj.lower(*args, **kwargs)`` would lower."""
    attribute = _INNER_ATTRIBUTE[library_kind(obj)]
    real = getattr(obj, attribute)
    object.__setattr__(obj, attribute, _InnerStandIn(real, action))
    try:
        obj.lower(*args, **kwargs)
    except _Finished as finished:
        return finished.result
    finally:
        object.__setattr__(obj, attribute, real)
    raise RuntimeError(f"{type(obj).__name__}.lower did not reach its inner jax.jit; this version of the "
                       "library is not supported by jaxmem (tested: flax 0.12.8, equinox 0.13.8)")


def user_leaf_names(parameters: list[str], args: tuple, kwargs: dict) -> dict[int, tuple[str, int | None, str]]:
    """``{id(array): (parameter, position, path)}`` for the arrays in the user's own arguments.

    nnx graph nodes are named by their state paths (``model.kernel``,
    ``opt.opt_state[0].mu.kernel``), other values by their pytree key paths.
    """
    names: dict[int, tuple[str, int | None, str]] = {}
    for index, value in enumerate(args):
        name = parameters[index] if index < len(parameters) else f"args[{index}]"
        _name_leaves(value, name, index, names)
    for key, value in kwargs.items():
        _name_leaves(value, key, parameters.index(key) if key in parameters else None, names)
    return names


def _name_leaves(value, parameter: str, index: int | None, names: dict) -> None:
    import jax

    for path, leaf in _nnx_leaves(value):
        names.setdefault(id(leaf), (parameter, index, parameter + path))
    for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
        names.setdefault(id(leaf), (parameter, index, parameter + jax.tree_util.keystr(path)))


def _nnx_leaves(value):
    """``(".a.b[0]", array)`` for every variable of an nnx graph node (nothing for other values)."""
    try:
        from flax import nnx
    except ImportError:
        return
    if not nnx.graph.is_graph_node(value):
        return
    for path, variable in nnx.to_flat_state(nnx.state(value)):
        array = variable.get_value() if hasattr(variable, "get_value") else getattr(variable, "value", variable)
        yield "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path), array

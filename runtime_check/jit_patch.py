"""Replace ``jax.jit`` and ``jax.pmap`` for the duration of a block.

Used by ``jaxmem record`` (to see every call's abstract signature) and by
the donation tracker (to see which call deleted which array).  Each
transformed function is built by the real transform and then handed to
``wrap(transformed, definition)``, which returns what the user's code gets.

The definition is located where the static analysis locates it: the line
of the jit decorator (``@jax.jit``, ``@partial(jax.jit, ...)``) for
decorated functions, the line of the ``jax.jit(...)`` call for wrapped ones.  In Python >= 3.8 a decorator is applied on the line
of the first decorator, which is also the function's ``co_firstlineno``;
that is how a decoration is told apart from a wrapping call.
"""

from __future__ import annotations

import functools
import importlib.abc
import linecache
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

_DEF_LINE = re.compile(r"^\s*(async\s+)?def\s")


@dataclass(frozen=True)
class JitDefinition:
    """Where and how a function was transformed."""

    path: str
    line: int
    code_first_line: int | None
    qualname: str
    module: str
    code_path: str | None
    transform: str  # "jit", "pmap", "nnx.jit" or "eqx.filter_jit"
    options: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> tuple[str, int]:
        """The record key: definition file and line."""
        return (self.path, self.line)


def _def_line(path: str, first_line: int) -> int:
    for line in range(first_line, first_line + 200):
        text = linecache.getline(path, line)
        if not text:
            break
        if _DEF_LINE.match(text):
            return line
    return first_line


_JIT_DECORATOR = re.compile(r"^\s*@.*\b(jit|pmap|pjit|filter_jit)\b")


def _jit_decorator_line(path: str, first_line: int) -> int:
    """The line of the jit decorator among those from ``first_line`` to the ``def``."""
    for line in range(first_line, _def_line(path, first_line) + 1):
        if _JIT_DECORATOR.match(linecache.getline(path, line)):
            return line
    return first_line


def definition_line_of(fun) -> int | None:
    """The line of ``fun``'s jit decorator (its first line when there is none); None without source."""
    code = getattr(fun, "__code__", None)
    if code is None:
        return None
    if getattr(fun, "__name__", "") == "<lambda>":
        return code.co_firstlineno
    return _jit_decorator_line(code.co_filename, code.co_firstlineno)


def locate_definition(fun, caller, transform: str, options: dict) -> JitDefinition:
    """The :class:`JitDefinition` for ``fun`` transformed in frame ``caller``."""
    code = getattr(fun, "__code__", None)
    qualname = getattr(fun, "__qualname__", getattr(fun, "__name__", repr(fun)))
    module = getattr(fun, "__module__", None) or "?"
    first_line = code.co_firstlineno if code is not None else None
    code_path = code.co_filename if code is not None else None
    decorated = (
        code is not None and caller is not None and getattr(fun, "__name__", "") != "<lambda>"
        and caller.f_code.co_filename == code.co_filename and caller.f_lineno == code.co_firstlineno
    )
    if decorated:
        path, line = code.co_filename, _jit_decorator_line(code.co_filename, code.co_firstlineno)
    elif caller is not None:
        path, line = caller.f_code.co_filename, caller.f_lineno
    else:
        path, line = code_path or "<unknown>", first_line or 0
    return JitDefinition(path, line, first_line, qualname, module, code_path, transform, dict(options))


def _patched(original: Callable, transform: str, wrap: Callable) -> Callable:
    def transform_and_wrap(fun=None, *args, **kwargs):
        if fun is None:
            def decorate(inner):
                definition = locate_definition(inner, sys._getframe(1), transform, kwargs)
                return wrap(original(inner, *args, **kwargs), definition)
            return decorate
        definition = locate_definition(fun, sys._getframe(1), transform, kwargs)
        if args and transform == "pmap":
            definition.options["axis_name"] = args[0]
        return wrap(original(fun, *args, **kwargs), definition)

    functools.update_wrapper(transform_and_wrap, original)
    transform_and_wrap.__jaxmem_original__ = original
    return transform_and_wrap


# (module, attribute, transform name): the library transforms patched beside jax's own.
_LIBRARY_TRANSFORMS = (("flax.nnx", "jit", "nnx.jit"), ("equinox", "filter_jit", "eqx.filter_jit"))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after one module is first imported (flax and equinox
    take seconds to import, so they are patched when the program imports them)."""

    def __init__(self, name: str, then: Callable):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        # The first hook for a module runs every hook's ``then`` (two blocks may patch one module;
        # asking another hook here would ask this one again, without end).
        hooks = [finder for finder in sys.meta_path if isinstance(finder, _AfterImport) and finder.name == fullname]
        for finder in sys.meta_path:
            if isinstance(finder, _AfterImport) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _LoaderThen(spec.loader, [hook.then for hook in hooks])
                return spec
        return None


class _LoaderThen(importlib.abc.Loader):
    def __init__(self, loader, thens: list[Callable]):
        self.loader, self.thens = loader, thens

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        for then in self.thens:
            then(module)


@contextmanager
def patched_attributes(patches: list[tuple[str, str, Callable]]):
    """In the block, ``module.attribute`` is ``replace(original)`` for each ``(module, attribute,
    replace)``; a module not yet imported is patched as soon as the program imports it."""
    saved = []

    def patch(module, attribute: str, replace: Callable) -> None:
        original = getattr(module, attribute, None)
        if callable(original):
            saved.append((module, attribute, original))
            setattr(module, attribute, replace(original))

    hooks = []
    for module_name, attribute, replace in patches:
        if module_name in sys.modules:
            patch(sys.modules[module_name], attribute, replace)
        else:
            hooks.append(_AfterImport(module_name, lambda module, a=attribute, r=replace: patch(module, a, r)))
    sys.meta_path[:0] = hooks
    try:
        yield
    finally:
        for hook in hooks:
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
        for module, attribute, original in reversed(saved):
            setattr(module, attribute, original)


@contextmanager
def patched_transforms(wrap: Callable):
    """In the block ``jax.jit``, ``jax.pmap``, ``nnx.jit``, ``eqx.filter_jit`` return ``wrap(result, definition)``.

    flax and equinox are patched when already imported, else as soon as the
    program imports them.
    """
    transforms = [("jax", "jit", "jit"), ("jax", "pmap", "pmap"), *_LIBRARY_TRANSFORMS]
    import jax  # noqa: F401 - jax itself is patched now, not on a later import

    with patched_attributes([(module, attribute, lambda original, t=transform: _patched(original, t, wrap))
                             for module, attribute, transform in transforms]):
        yield


class TransformedProxy:
    """A stand-in for a jitted/pmapped function that runs hooks around each call.

    Attribute access (``lower``, ``trace``, ``eval_shape``...) goes to the real
    function; binding as a method works like ``PjitFunction``'s.
    """

    def __init__(self, transformed, definition: JitDefinition, around_call: Callable):
        self.__wrapped__ = transformed
        self.__jaxmem_transformed__ = transformed
        self._jaxmem_definition = definition
        self._jaxmem_around_call = around_call
        functools.update_wrapper(self, transformed, updated=())

    def __call__(self, *args, **kwargs):
        return self._jaxmem_around_call(self.__wrapped__, self._jaxmem_definition, args, kwargs, sys._getframe(1))

    def __getattr__(self, name):
        return getattr(self.__wrapped__, name)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return functools.partial(self, instance)

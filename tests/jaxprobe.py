"""Run example code under real JAX and watch what donation really does.

``run_probed(code)`` executes ``code`` with ``jax.jit``/``jax.pmap``
wrapped so that, after every call of a jitted function, we record whether
each argument it donates reports ``is_deleted()``.  The real jit runs and
really donates; the wrapper only looks.
"""

from __future__ import annotations

import contextlib
import inspect
import io
from dataclasses import dataclass, field

import jax


@dataclass
class ProbeCall:
    name: str
    donated: list[str]
    deleted: list[bool]


@dataclass
class ProbeResult:
    calls: list[ProbeCall] = field(default_factory=list)
    stdout: str = ""
    namespace: dict = field(default_factory=dict)

    @property
    def donating_calls(self) -> list[ProbeCall]:
        return [c for c in self.calls if c.donated]


def _as_tuple(value):
    if value is None:
        return ()
    if isinstance(value, (int, str)):
        return (value,)
    return tuple(value)


def _leaves_deleted(value) -> bool:
    leaves = [leaf for leaf in jax.tree_util.tree_leaves(value) if isinstance(leaf, jax.Array)]
    return bool(leaves) and all(leaf.is_deleted() for leaf in leaves)


class _Probe:
    def __init__(self, real, calls):
        self.real = real
        self.calls = calls

    def __call__(self, fun=None, *args, **kwargs):
        if fun is None:  # decorator factory: @jax.jit(donate_argnums=...)
            return lambda f: self(f, *args, **kwargs)
        compiled = self.real(fun, *args, **kwargs)
        nums = _as_tuple(kwargs.get("donate_argnums"))
        names = _as_tuple(kwargs.get("donate_argnames"))
        try:
            params = list(inspect.signature(fun).parameters)
        except (TypeError, ValueError):
            params = []
        calls = self.calls

        def probed(*call_args, **call_kwargs):
            result = compiled(*call_args, **call_kwargs)
            donated, deleted = [], []
            for i, value in enumerate(call_args):
                if i in nums or (i < len(params) and params[i] in names):
                    donated.append(params[i] if i < len(params) else str(i))
                    deleted.append(_leaves_deleted(value))
            for key, value in call_kwargs.items():
                if key in names or (key in params and params.index(key) in nums):
                    donated.append(key)
                    deleted.append(_leaves_deleted(value))
            calls.append(ProbeCall(getattr(fun, "__name__", "?"), donated, deleted))
            return result

        probed.__wrapped__ = compiled
        return probed


@contextlib.contextmanager
def probing(calls: list):
    real_jit = jax.jit
    jax.jit = _Probe(real_jit, calls)
    try:
        yield
    finally:
        jax.jit = real_jit


def run_probed(code: str) -> ProbeResult:
    """Execute ``code`` as ``__main__`` with donation probing."""
    result = ProbeResult()
    namespace = {"__name__": "__main__"}
    buffer = io.StringIO()
    with probing(result.calls), contextlib.redirect_stdout(buffer):
        exec(compile(code, "example.py", "exec"), namespace)
    result.stdout = buffer.getvalue()
    result.namespace = namespace
    return result


def run_plain(code: str) -> ProbeResult:
    """Execute ``code`` as ``__main__`` without any wrapping."""
    result = ProbeResult()
    namespace = {"__name__": "__main__"}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, "example.py", "exec"), namespace)
    result.stdout = buffer.getvalue()
    result.namespace = namespace
    return result

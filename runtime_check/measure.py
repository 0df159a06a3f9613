"""``verify(..., measure=True)``: run both variants and read the device's peak memory.

``Device.memory_stats()["peak_bytes_in_use"]`` only grows (there is no
reset), so each variant runs in a fresh process: one process compiles both
variants into a private persistent compilation cache (so GPU autotuning
scratch does not land in a measured peak), then one process per variant
loads its executable, creates fresh inputs, runs once and reports the peak
and whether the donated inputs were deleted.  On CPU ``memory_stats()`` is
``None``: measurement is reported as unavailable.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile

from jaxmem.runtime_check.report import Measurement, VerifyReport
from jaxmem.runtime_check.targets import Target

ALLOCATOR_VARIABLES = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                       "XLA_PYTHON_CLIENT_ALLOCATOR")
_DEFAULTS = {"XLA_PYTHON_CLIENT_PREALLOCATE": "unset (jax preallocates 75%)",
             "XLA_PYTHON_CLIENT_MEM_FRACTION": "unset (0.75)",
             "XLA_PYTHON_CLIENT_ALLOCATOR": "unset (BFC)"}
WORKER_TIMEOUT_S = 600


def allocator_settings() -> dict[str, str]:
    """The GPU allocator environment in force, so measured peaks can be interpreted."""
    return {name: os.environ.get(name, _DEFAULTS[name]) for name in ALLOCATOR_VARIABLES}


def _function_reference(fn) -> tuple[dict | None, str | None]:
    qualname = getattr(fn, "__qualname__", "")
    module = getattr(fn, "__module__", None)
    if not qualname or "<locals>" in qualname or "<lambda>" in qualname or module is None:
        return None, (f"{qualname or fn!r} is not importable (a lambda or a function defined inside "
                      "another), and each variant must be re-imported in a fresh process; move it to "
                      "module level")
    code = getattr(fn, "__code__", None)
    return {"module": module, "qualname": qualname, "code_path": code.co_filename if code else None}, None


def _abstract(value, statics_ok: bool):
    import jax

    def leaf(x):
        if isinstance(x, (jax.Array, jax.ShapeDtypeStruct)) or hasattr(x, "dtype"):
            return jax.ShapeDtypeStruct(x.shape, x.dtype)
        return x

    return value if statics_ok else jax.tree.map(leaf, value)


def build_spec(target: Target, args, kwargs, backend: str | None) -> tuple[dict | None, str | None]:
    """A picklable description a worker process can rebuild the target and inputs from."""
    if target.kind in ("nnx", "eqx"):
        return None, (f"measuring a {target.kind} jit object is not supported: its modules cannot be rebuilt "
                      "in a worker process; measure the functional form instead (nnx.split/nnx.merge or "
                      "eqx.partition/eqx.combine inside a module-level jax.jit)")
    reference, problem = _function_reference(target.function)
    if problem:
        return None, problem
    static = {i % len(args) for i in target.static_argnums} if args else set()
    spec = {
        **reference, "kind": target.kind, "wrapper": target.wrapper,
        "donate_argnums": target.donate_argnums, "donate_argnames": target.donate_argnames,
        "static_argnums": target.static_argnums if target.kind == "jit" else (),
        "static_argnames": target.static_argnames if target.kind == "jit" else (),
        "static_positions": sorted(static),
        "args": [_abstract(value, i in static) for i, value in enumerate(args)],
        "kwargs": {k: _abstract(v, k in target.static_argnames) for k, v in kwargs.items()},
        "backend": backend, "sys_path": [entry or os.getcwd() for entry in sys.path],
    }
    try:
        pickle.dumps(spec)
    except Exception as error:  # noqa: BLE001
        return None, f"the inputs or the transform cannot be sent to a worker process ({error})"
    return spec, None


def run_variant(spec: dict, variant: str, workdir: str) -> dict:
    """Run one worker (``warm``, ``with`` or ``without``) and return what it reports."""
    spec_path = os.path.join(workdir, "spec.pkl")
    with open(spec_path, "wb") as handle:
        pickle.dump({**spec, "cache_dir": os.path.join(workdir, "cache")}, handle)
    out_path = os.path.join(workdir, f"{variant}.json")
    # cwd=workdir: "-m" puts the working directory first on sys.path, where a
    # checkout of jaxmem itself would shadow the installed package.
    done = subprocess.run([sys.executable, "-m", "jaxmem.runtime_check.measure_worker", spec_path, variant, out_path],
                          capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, cwd=workdir)
    if done.returncode != 0:
        raise RuntimeError(f"the {variant!r} measurement process failed (exit {done.returncode}):\n"
                           + done.stderr[-2000:])
    with open(out_path, encoding="utf-8") as handle:
        return json.load(handle)


def measure_target(target: Target, args, kwargs, report: VerifyReport, backend: str | None = None,
                   require_memory_stats: bool = True) -> Measurement:
    """Measure both variants of ``target`` (see the module docstring)."""
    import jax

    device = jax.devices(backend)[0] if backend else jax.devices()[0]
    settings = allocator_settings() if device.platform != "cpu" else {}
    if require_memory_stats and device.memory_stats() is None:
        return Measurement(False, f"the {device.platform} backend reports no memory statistics "
                                  "(Device.memory_stats() is None), so peak memory cannot be measured; "
                                  "the figures above are XLA's compiled prediction")
    spec, problem = build_spec(target, args, kwargs, backend)
    if problem:
        return Measurement(False, problem, allocator_settings=settings)
    with tempfile.TemporaryDirectory(prefix="jaxmem-measure-") as workdir:
        run_variant(spec, "warm", workdir)
        without = run_variant(spec, "without", workdir)
        with_ = run_variant(spec, "with", workdir)
    notes = [text for text in (without.get("note"), with_.get("note")) if text]
    if with_.get("peak_after") is None:
        notes.append(f"the {device.platform} backend reports no memory statistics; only deletion was checked")
    return Measurement(
        available=with_.get("peak_after") is not None,
        note="; ".join(notes),
        peak_with_donation=with_.get("peak_after"), peak_without_donation=without.get("peak_after"),
        donated_inputs_deleted=with_.get("donated_deleted"), allocator_settings=settings,
    )

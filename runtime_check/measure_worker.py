"""One measurement process (see :mod:`jaxmem.runtime_check.measure`).

``python -m jaxmem.runtime_check.measure_worker SPEC.pkl warm|with|without OUT.json``
"""

from __future__ import annotations

import json
import pickle
import sys


def _configure_cache(cache_dir: str) -> None:
    import jax

    jax.config.update("jax_compilation_cache_dir", cache_dir)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _load_target(spec: dict):
    from jaxmem.runtime_check.sources import load_function, plain_function
    from jaxmem.runtime_check.targets import resolve_target

    fn = plain_function(load_function(spec["module"], spec["qualname"], spec["code_path"]))
    return resolve_target(
        fn, donate_argnums=spec["donate_argnums"] or None, donate_argnames=spec["donate_argnames"] or None,
        static_argnums=spec["static_argnums"] or None, static_argnames=spec["static_argnames"] or None,
        wrapper=spec["wrapper"])


def _fresh(dynamic, compiled):
    """Concrete arrays (ones) for every ShapeDtypeStruct leaf, created where the program takes them.

    Values do not change the program's memory.  Each input is made directly in
    the compiled input sharding: an array made elsewhere would be copied
    before the call and only the copy donated (pmap, jit with in_shardings).
    """
    import jax
    import jax.numpy as jnp

    shardings = dict(jax.tree_util.tree_flatten_with_path(compiled.input_shardings)[0])

    def make(path, value):
        if not isinstance(value, jax.ShapeDtypeStruct):
            return value
        sharding = shardings.get(path)
        return jnp.ones(value.shape, value.dtype, device=sharding) if sharding is not None else \
            jnp.ones(value.shape, value.dtype)

    return jax.tree_util.tree_map_with_path(make, dynamic)


def measure(spec: dict, variant: str) -> dict:
    """Compile (``warm``) or run one variant and report its peak memory."""
    import jax

    _configure_cache(spec["cache_dir"])
    target = _load_target(spec)
    device = jax.devices(spec["backend"])[0] if spec["backend"] else jax.devices()[0]
    static = set(spec["static_positions"])
    with jax.default_device(device):
        if variant == "warm":
            for donate in (True, False):
                target.build(donate).lower(*spec["args"], **spec["kwargs"]).compile()
            return {}
        compiled = target.build(variant == "with").lower(*spec["args"], **spec["kwargs"]).compile()
        dynamic = tuple(value for i, value in enumerate(spec["args"]) if i not in static)
        dynamic_kwargs = {k: v for k, v in spec["kwargs"].items() if k not in target.static_argnames}
        dynamic, dynamic_kwargs = _fresh((dynamic, dynamic_kwargs), compiled)
        jax.block_until_ready((dynamic, dynamic_kwargs))
        if target.kind == "pmap":  # pmap's args_info flags one leaf per argument; it donates them all
            positions = [i for i in range(len(spec["args"])) if i not in static]
            donated = [leaf for position, value in zip(positions, dynamic)
                       if position in target.donate_argnums for leaf in jax.tree.leaves(value)]
        else:
            donated = [leaf for leaf, info in zip(jax.tree.leaves((dynamic, dynamic_kwargs)),
                                                  jax.tree.leaves(compiled.args_info)) if info.donated]
        before = device.memory_stats()
        result = compiled(*dynamic, **dynamic_kwargs)
        jax.block_until_ready(result)
        after = device.memory_stats()
    report = {"platform": device.platform,
              "donated_deleted": all(leaf.is_deleted() for leaf in donated) if donated else None,
              "peak_before": None, "peak_after": None, "in_use_before": None}
    if before is not None and after is not None:
        report.update(peak_before=before.get("peak_bytes_in_use"), peak_after=after.get("peak_bytes_in_use"),
                      in_use_before=before.get("bytes_in_use"))
        if report["peak_after"] == report["peak_before"]:
            report["note"] = (f"{variant} donation: the run did not raise the process's peak above what "
                              "input creation had reached; its measured peak is an upper bound")
    return report


def main(argv: list[str]) -> int:
    """Entry point: read the spec, measure, write JSON."""
    spec_path, variant, out_path = argv
    with open(spec_path, "rb") as handle:
        spec = pickle.load(handle)
    sys.path[:0] = [p for p in spec.get("sys_path", []) if p not in sys.path]
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(measure(spec, variant), handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

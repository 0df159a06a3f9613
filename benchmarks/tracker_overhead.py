"""Per-call cost of the donation tracker (`jaxmem run`, `track_donations`) on a jitted step.

A jitted function donating a pytree of LEAVES small arrays is called CALLS
times untracked and CALLS times under ``track_donations()`` (each call
rebinds the tree, as a training loop does); the median per-call wall time of
each and their ratio are printed.  Target: tracked at most 2x untracked for
a 200-leaf pytree.

    python benchmarks/tracker_overhead.py                 # 200 leaves, 2000 calls
    python benchmarks/tracker_overhead.py --leaves 1000 --json benchmarks/.cache/tracker.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import jax
import jax.numpy as jnp

from jaxmem.runtime_check import track_donations


def _per_call_ms(step, tree, calls: int) -> float:
    tree = step(tree)  # compile outside the timing
    jax.block_until_ready(tree)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        tree = step(tree)
        samples.append(time.perf_counter() - started)
    jax.block_until_ready(tree)
    return statistics.median(samples) * 1e3


def measure(leaves: int, calls: int) -> dict:
    """Median milliseconds per call untracked and tracked, and their ratio."""
    def update(tree):
        return jax.tree.map(lambda x: x + 1, tree)

    make = lambda: {f"p{i}": jnp.zeros((4,)) for i in range(leaves)}
    untracked = _per_call_ms(jax.jit(update, donate_argnums=0), make(), calls)
    with track_donations():
        tracked_step = jax.jit(update, donate_argnums=0)
        tracked = _per_call_ms(tracked_step, make(), calls)
    return {"leaves": leaves, "calls": calls, "untracked_ms": round(untracked, 4),
            "tracked_ms": round(tracked, 4), "ratio": round(tracked / untracked, 3),
            "jax": jax.__version__, "backend": jax.default_backend()}


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when tracked is more than twice untracked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    result = measure(args.leaves, args.calls)
    print(f"{result['leaves']} leaves, median of {result['calls']} calls on {result['backend']}: "
          f"untracked {result['untracked_ms']:.3f} ms, tracked {result['tracked_ms']:.3f} ms "
          f"(x{result['ratio']:.2f})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
            handle.write("\n")
    return 0 if result["ratio"] <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())

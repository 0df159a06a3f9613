"""Per-step cost of `jaxmem confirm` on a training loop, after compilation.

The same loop (``params, opt_state = step(params, opt_state, batch)`` with
optax adam on an MLP) runs STEPS times plain (no donation, no jaxmem) and
STEPS times jitted with ``donate_argnums=(0, 1)`` (what confirm runs, without
jaxmem) and STEPS times under :func:`jaxmem.runtime_check.confirm.confirming` with the
proposals ``jaxmem confirm`` would watch (``params`` and ``opt_state``).
Both are warmed up first (compilation, and confirm's reuse check and
variant compile, happen outside the timing).  Printed: median and mean
milliseconds per step and their ratios; target at most 2x.  What confirm
does per call: every call maps the proposals to arguments, flattens the
donated arguments, checks that no array is donated twice, calls the
donating variant and remembers the deleted leaves (weak references); the
calls ``SCAN_POLICY`` names also scan the heap for other holders
(``gc.get_referrers``), which the mean shows and the median hides.

    python benchmarks/confirm_overhead.py                       # MLP 512 wide, 300 steps
    python benchmarks/confirm_overhead.py --width 32 --layers 24  # many small leaves (worst case)
    python benchmarks/confirm_overhead.py --json benchmarks/results/confirm-overhead.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import optax

from jaxmem.runtime_check.confirm import SCAN_POLICY, confirming

WARMUP = 5


def _model(width: int, layers: int):
    keys = jax.random.split(jax.random.PRNGKey(0), layers)
    return {f"layer{i}": {"w": jax.random.normal(k, (width, width)) / width ** 0.5, "b": jnp.zeros((width,))}
            for i, k in enumerate(keys)}


def _update(tx):
    def loss(params, batch):
        x = batch
        for i in range(len(params)):
            x = jnp.tanh(x @ params[f"layer{i}"]["w"] + params[f"layer{i}"]["b"])
        return (x ** 2).mean()

    def update(params, opt_state, batch):
        grads = jax.grad(loss)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return update


def _loop_ms(make_step, width: int, layers: int, steps: int) -> list[float]:
    tx = optax.adam(1e-3)
    step = make_step(_update(tx))
    params = _model(width, layers)
    opt_state = tx.init(params)
    batch = jnp.ones((32, width))
    samples = []
    for index in range(WARMUP + steps):
        started = time.perf_counter()
        params, opt_state = step(params, opt_state, batch)
        jax.block_until_ready(params)
        if index >= WARMUP:
            samples.append((time.perf_counter() - started) * 1e3)
    return samples


def measure(width: int, layers: int, steps: int, rounds: int = 3) -> dict:
    """Milliseconds per step plain and under confirm, and the ratios.

    The two alternate over ``rounds`` rounds of ``steps // rounds`` steps, so
    that a change in the machine's load (a shared CPU) hits both alike.
    """
    plain, donating, watched, outcomes = [], [], [], {}
    line = sys._getframe().f_lineno + 2  # the line of the jax.jit call below: the definition confirm watches
    make = lambda update: (
        jax.jit(update))
    proposals = [{"definition_path": __file__, "definition_line": line, "function": "update",
                  "parameter_name": name, "parameter_index": index, "confidence": "medium"}
                 for index, name in enumerate(("params", "opt_state"))]
    per_round = max(1, steps // rounds)
    for _ in range(rounds):
        plain += _loop_ms(jax.jit, width, layers, per_round)
        donating += _loop_ms(lambda update: jax.jit(update, donate_argnums=(0, 1)), width, layers, per_round)
        with confirming(proposals, set()) as confirmer:
            watched += _loop_ms(make, width, layers, per_round)
        for watch in (w for watches in confirmer.watches.values() for w in watches):
            if watch.donated_calls != WARMUP + per_round or watch.refutations:
                raise SystemExit(f"confirm did not apply the donation of `{watch.label}` on every step: "
                                 f"{watch.donated_calls} calls, {watch.refutations}")
            outcomes[watch.label] = watch.scanned_calls
    leaves = len(jax.tree_util.tree_leaves(_model(width, layers))) * 3 + 1
    result = {"width": width, "layers": layers, "steps": per_round * rounds, "donated_leaves": leaves,
              "plain_median_ms": statistics.median(plain), "confirm_median_ms": statistics.median(watched),
              "donating_median_ms": statistics.median(donating), "donating_mean_ms": statistics.fmean(donating),
              "plain_mean_ms": statistics.fmean(plain), "confirm_mean_ms": statistics.fmean(watched),
              "heap_scans_per_round": max(outcomes.values()), "rounds": rounds,
              "scan_policy": SCAN_POLICY,
              "jax": jax.__version__, "backend": jax.default_backend()}
    result["median_ratio"] = result["confirm_median_ms"] / result["plain_median_ms"]
    result["mean_ratio"] = result["confirm_mean_ms"] / result["plain_mean_ms"]
    # jaxmem's own cost: confirm against the loop that donates the same way without jaxmem
    result["median_ratio_vs_donating"] = result["confirm_median_ms"] / result["donating_median_ms"]
    result["mean_ratio_vs_donating"] = result["confirm_mean_ms"] / result["donating_mean_ms"]
    return {key: round(value, 4) if isinstance(value, float) else value for key, value in result.items()}


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when confirm costs more than twice either loop (mean)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    result = measure(args.width, args.layers, args.steps)
    print(f"MLP {result['layers']}x{result['width']} ({result['donated_leaves']} donated leaves), "
          f"{result['steps']} steps on {result['backend']}: plain {result['plain_median_ms']:.3f} ms, "
          f"confirm {result['confirm_median_ms']:.3f} ms per step (median, x{result['median_ratio']:.2f}; "
          f"mean x{result['mean_ratio']:.2f}; {result['heap_scans_per_round']} heap scans per round of "
          f"{result['steps'] // result['rounds']} steps + {WARMUP} warm-up: {result['scan_policy']}); "
          f"against the same loop donating without jaxmem ({result['donating_median_ms']:.3f} ms): median "
          f"x{result['median_ratio_vs_donating']:.2f}, mean x{result['mean_ratio_vs_donating']:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
            handle.write("\n")
    return 0 if max(result["mean_ratio"], result["mean_ratio_vs_donating"]) <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""GPU check of the runtime verifier: a real training step, measured against the prediction.

An MLP with an Adam update written in jax.numpy, at a few GB of parameters
plus optimizer state, is verified with ``measure=True``: each variant (with
and without donating params and optimizer state) runs in its own process,
and the measured peak-memory saving is compared with XLA's compiled
prediction and with the bytes of the donated state.

    python benchmarks/gpu_verify.py            # on a GPU: ~6.4 GiB of state, < 5 minutes
    python benchmarks/gpu_verify.py --small    # anywhere (CPU): tiny shapes, checks the plumbing

Results go to ``benchmarks/results/<date>-<device>.json`` (``--small``:
``benchmarks/.cache/gpu_verify-small.json``).  Nothing is installed or
downloaded.  Exit 1 when a GPU run misses a target.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time

import jax
import jax.numpy as jnp

TOLERANCE = 0.02
FULL = {"layers": 4, "width": 4096, "batch": 256}    # 4 * 8 * 4096^2 f32 = 2.0 GiB params, 6.0 GiB with Adam
SMALL = {"layers": 2, "width": 64, "batch": 8}


def init_params(layers: int, width: int) -> dict:
    """Abstract MLP parameters: per layer an up (width x 4width) and a down projection with biases."""
    def layer():
        return {"up": {"kernel": jax.ShapeDtypeStruct((width, 4 * width), jnp.float32),
                       "bias": jax.ShapeDtypeStruct((4 * width,), jnp.float32)},
                "down": {"kernel": jax.ShapeDtypeStruct((4 * width, width), jnp.float32),
                         "bias": jax.ShapeDtypeStruct((width,), jnp.float32)}}
    return {f"layer{i}": layer() for i in range(layers)}


def init_adam(params) -> dict:
    """Abstract Adam state: first and second moments like the params, and a step count."""
    return {"m": params, "v": params, "count": jax.ShapeDtypeStruct((), jnp.int32)}


def loss_fn(params, batch):
    """Mean squared output of a residual MLP."""
    x = batch
    for name in sorted(params):
        layer = params[name]
        hidden = jax.nn.gelu(x @ layer["up"]["kernel"] + layer["up"]["bias"])
        x = x + hidden @ layer["down"]["kernel"] + layer["down"]["bias"]
    return jnp.mean(x ** 2)


def train_step(params, opt_state, batch):
    """One Adam step (lr 1e-3, betas 0.9/0.999); returns new params, new state, loss."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    count = opt_state["count"] + 1
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, opt_state["m"], grads)
    v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, opt_state["v"], grads)
    scale = jnp.sqrt(1 - 0.999 ** count) / (1 - 0.9 ** count)
    params = jax.tree.map(lambda p, m, v: p - 1e-3 * scale * m / (jnp.sqrt(v) + 1e-8), params, m, v)
    return params, {"m": m, "v": v, "count": count}, loss


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def run(shape: dict) -> dict:
    """Verify and measure ``train_step`` at ``shape``; return the result document."""
    from jaxmem.runtime_check import verify

    started = time.time()
    params = init_params(shape["layers"], shape["width"])
    opt_state = init_adam(params)
    batch = jax.ShapeDtypeStruct((shape["batch"], shape["width"]), jnp.float32)
    report = verify(train_step, params, opt_state, batch, donate_argnums=(0, 1), measure=True)
    device = jax.devices()[0]
    measured = report.measurement
    predicted = report.predicted_saving
    saving = measured.measured_saving if measured else None
    ratio = saving / predicted if saving is not None and predicted else None
    return {
        "date": datetime.date.today().isoformat(), "device": device.device_kind, "platform": device.platform,
        "jax": jax.__version__, "shape": shape,
        "donated_state_bytes": report.donated_bytes, "predicted_saving_bytes": predicted,
        "measured_saving_bytes": saving, "measured_to_predicted": ratio,
        "measured_within_2_percent": None if ratio is None else abs(ratio - 1) <= TOLERANCE,
        "prediction_equals_donated_state": (
            predicted is not None and abs(predicted - report.donated_bytes) <= TOLERANCE * report.donated_bytes),
        "donated_inputs_deleted": measured.donated_inputs_deleted if measured else None,
        "all_leaves_reused": report.ok,
        "measurement_note": measured.note if measured else None,
        "report": report.to_dict(), "report_text": report.render_text(),
        "elapsed_s": round(time.time() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the check and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny shapes (for CPU)")
    parser.add_argument("--out", help="results file (default: see the module docstring)")
    args = parser.parse_args(argv)
    result = run(SMALL if args.small else FULL)
    here = os.path.dirname(os.path.abspath(__file__))
    out = args.out or (os.path.join(here, ".cache", "gpu_verify-small.json") if args.small else
                       os.path.join(here, "results", f"{result['date']}-{_slug(result['device'])}.json"))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
        handle.write("\n")
    print(result["report_text"])
    print(f"results written to {out}")
    if result["platform"] == "cpu":
        print("cpu: no device memory statistics, so nothing was measured; run this on a GPU")
        return 0
    met = (result["measured_within_2_percent"] and result["prediction_equals_donated_state"]
           and result["donated_inputs_deleted"] and result["all_leaves_reused"])
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

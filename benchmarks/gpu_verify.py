"""GPU check of the runtime verifier: real training steps, measured against the prediction.

Three cases, each verified with ``measure=True`` (each variant, with and
without donating the training state, runs in its own process; the measured
peak-memory saving is compared with XLA's compiled prediction and with the
bytes of the donated state):

* ``mlp_adam``: an MLP with an Adam update written in jax.numpy, under jax.jit;
* ``nnx_optax``: the same MLP as flax nnx modules with an ``nnx.Optimizer``
  over optax AdamW.  The ``nnx.jit`` step is verified as users write it; the
  measurement runs its functional twin (``nnx.split``/``nnx.merge`` inside
  ``jax.jit``), because nnx objects cannot be rebuilt in a worker process,
  and the two predictions must agree;
* ``pmap_mlp_adam``: ``mlp_adam`` under ``jax.pmap`` over every local device
  (gradients averaged with ``pmean``); figures are per device.

    python benchmarks/gpu_verify.py            # on a GPU: ~6 GiB of state per case, < 10 minutes
    python benchmarks/gpu_verify.py --small    # anywhere (CPU): tiny shapes, checks the plumbing
    python benchmarks/gpu_verify.py --small --case pmap_mlp_adam

Results go to ``benchmarks/results/<date>-<device>.json`` (``--small``:
``benchmarks/.cache/gpu_verify-small.json``).  Nothing is installed or
downloaded.  Exit 1 when a GPU run misses a target.
"""

from __future__ import annotations

import argparse
import datetime
import functools
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


def adam_update(params, opt_state, grads):
    """One Adam step (lr 1e-3, betas 0.9/0.999)."""
    count = opt_state["count"] + 1
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, opt_state["m"], grads)
    v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, opt_state["v"], grads)
    scale = jnp.sqrt(1 - 0.999 ** count) / (1 - 0.9 ** count)
    params = jax.tree.map(lambda p, m, v: p - 1e-3 * scale * m / (jnp.sqrt(v) + 1e-8), params, m, v)
    return params, {"m": m, "v": v, "count": count}


def train_step(params, opt_state, batch):
    """One Adam step; returns new params, new state, loss."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    params, opt_state = adam_update(params, opt_state, grads)
    return params, opt_state, loss


def pmap_train_step(params, opt_state, batch):
    """``train_step`` with gradients averaged over the ``devices`` axis."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    grads = jax.lax.pmean(grads, "devices")
    params, opt_state = adam_update(params, opt_state, grads)
    return params, opt_state, jax.lax.pmean(loss, "devices")


pmapped_train_step = jax.pmap(pmap_train_step, axis_name="devices", donate_argnums=(0, 1))


# --- flax nnx + optax -------------------------------------------------------------------------

def _nnx_model_and_optimizer(layers: int, width: int):
    import optax
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.up = nnx.Linear(width, 4 * width, rngs=rngs)
            self.down = nnx.Linear(4 * width, width, rngs=rngs)

        def __call__(self, x):
            return x + self.down(jax.nn.gelu(self.up(x)))

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.blocks = nnx.List([Block(rngs) for _ in range(layers)])

        def __call__(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    model = MLP(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)


def nnx_loss_and_update(model, optimizer, batch):
    """One AdamW step on ``model`` in place; returns the loss."""
    from flax import nnx

    loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(batch) ** 2))(model)
    optimizer.update(model, grads)
    return loss


@functools.lru_cache(maxsize=None)
def nnx_graphdef(sizes: tuple[int, int]):
    """The (hashable) structure of the nnx model and optimizer of ``sizes`` = (layers, width)."""
    from flax import nnx

    graphdef, _ = nnx.split(nnx.eval_shape(lambda: _nnx_model_and_optimizer(*sizes)))
    return graphdef


def nnx_functional_step(sizes, state, batch):
    """``nnx_loss_and_update`` as a pure function of the split state (``sizes`` is static)."""
    from flax import nnx

    model, optimizer = nnx.merge(nnx_graphdef(sizes), state)
    loss = nnx_loss_and_update(model, optimizer, batch)
    return nnx.state((model, optimizer)), loss


def nnx_inputs(shape: dict):
    """The measured nnx step and its abstract inputs; extras compare it with the ``nnx.jit`` step as written."""
    from flax import nnx

    from jaxmem.runtime_check import verify

    sizes = (shape["layers"], shape["width"])
    model, optimizer = nnx.eval_shape(lambda: _nnx_model_and_optimizer(*sizes))
    batch = jax.ShapeDtypeStruct((shape["batch"], shape["width"]), jnp.float32)
    as_written = verify(nnx.jit(nnx_loss_and_update, donate_argnums=(0, 1)), model, optimizer, batch)
    _, state = nnx.split((model, optimizer))
    extra = {"nnx_jit_predicted_saving_bytes": as_written.predicted_saving,
             "nnx_jit_all_leaves_reused": as_written.ok}
    return nnx_functional_step, (sizes, state, batch), {"static_argnums": 0, "donate_argnums": 1}, extra


def mlp_inputs(shape: dict):
    """The jax.numpy MLP + Adam step and its abstract inputs."""
    params = init_params(shape["layers"], shape["width"])
    batch = jax.ShapeDtypeStruct((shape["batch"], shape["width"]), jnp.float32)
    return train_step, (params, init_adam(params), batch), {"donate_argnums": (0, 1)}, {}


def pmap_inputs(shape: dict):
    """The pmapped step and its abstract inputs, stacked over every local device."""
    devices = jax.local_device_count()
    stacked = lambda tree: jax.tree.map(lambda s: jax.ShapeDtypeStruct((devices, *s.shape), s.dtype), tree)
    params = init_params(shape["layers"], shape["width"])
    batch = jax.ShapeDtypeStruct((devices, shape["batch"], shape["width"]), jnp.float32)
    return pmapped_train_step, (stacked(params), stacked(init_adam(params)), batch), {}, {"devices": devices}


CASES = {"mlp_adam": mlp_inputs, "nnx_optax": nnx_inputs, "pmap_mlp_adam": pmap_inputs}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def run_case(name: str, shape: dict) -> dict:
    """Verify and measure one case at ``shape``; return its result document."""
    from jaxmem.runtime_check import verify

    started = time.time()
    fn, args, options, extra = CASES[name](shape)
    report = verify(fn, *args, measure=True, **options)
    if "nnx_jit_predicted_saving_bytes" in extra:
        extra["nnx_jit_matches_functional"] = extra["nnx_jit_predicted_saving_bytes"] == report.predicted_saving
    measured = report.measurement
    predicted = report.predicted_saving
    saving = measured.measured_saving if measured else None
    ratio = saving / predicted if saving is not None and predicted else None
    reused = sum(leaf.nbytes for leaf in report.leaves if leaf.aliased)
    return {
        "shape": shape, **extra,
        "donated_state_bytes": report.donated_bytes, "reused_bytes": reused,
        "predicted_saving_bytes": predicted, "measured_saving_bytes": saving, "measured_to_predicted": ratio,
        "measured_within_2_percent": None if ratio is None else abs(ratio - 1) <= TOLERANCE,
        "prediction_equals_donated_state": (
            predicted is not None and abs(predicted - report.donated_bytes) <= TOLERANCE * report.donated_bytes),
        "saving_gap": report.saving_gap,
        "donated_inputs_deleted": measured.donated_inputs_deleted if measured else None,
        "all_leaves_reused": report.ok,
        "measurement_note": measured.note if measured else None,
        "report": report.to_dict(), "report_text": report.render_text(),
        "elapsed_s": round(time.time() - started, 1),
    }


def _met(result: dict) -> bool:
    # The prediction may be below the donated bytes when XLA needs copies (see saving_gap);
    # the target is that the measurement matches the prediction.
    return bool(result["measured_within_2_percent"] and result["donated_inputs_deleted"]
                and result["all_leaves_reused"] and result.get("nnx_jit_matches_functional", True))


def main(argv: list[str] | None = None) -> int:
    """Run the cases and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny shapes (for CPU)")
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="run only this case (repeatable)")
    parser.add_argument("--out", help="results file (default: see the module docstring)")
    args = parser.parse_args(argv)
    shape = SMALL if args.small else FULL
    device = jax.devices()[0]
    result = {"date": datetime.date.today().isoformat(), "device": device.device_kind,
              "platform": device.platform, "jax": jax.__version__, "cases": {}}
    for name in args.case or list(CASES):
        result["cases"][name] = run_case(name, shape)
        print(f"== {name}\n{result['cases'][name]['report_text']}\n")
    here = os.path.dirname(os.path.abspath(__file__))
    out = args.out or (os.path.join(here, ".cache", "gpu_verify-small.json") if args.small else
                       os.path.join(here, "results", f"{result['date']}-{_slug(result['device'])}.json"))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
        handle.write("\n")
    print(f"results written to {out}")
    if result["platform"] == "cpu":
        print("cpu: no device memory statistics, so nothing was measured; run this on a GPU")
        return 0
    return 0 if all(_met(case) for case in result["cases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

"""A small JAX training script: an MLP regressor trained with Adam.

It has two donation problems that `jaxmem check examples/` finds:

* `train_step` is jitted without donating the parameters and optimizer
  state it replaces, so every step holds two copies of them (JXM001).
  Only `params` is safe to donate as the code stands: `adam_init` shares
  one zeros tree between `mu` and `nu`, so donating `opt_state` would fail
  with "Attempt to donate the same buffer twice" (jaxmem says so and
  gives that proposal medium confidence);
* `ema_update` donates the running average, which `evaluate` then reads
  again: this crashes with "Array has been deleted" (JXM101).

Run it with `python examples/train.py` to see the crash.
"""

from functools import partial

import jax
import jax.numpy as jnp


def init_params(key, sizes=(8, 32, 32, 1)):
    """Glorot-initialised weights and zero biases for each layer."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        scale = jnp.sqrt(2.0 / (fan_in + fan_out))
        params.append({"w": scale * jax.random.normal(sub, (fan_in, fan_out)), "b": jnp.zeros(fan_out)})
    return params


def predict(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    last = params[-1]
    return x @ last["w"] + last["b"]


def loss_fn(params, batch):
    x, y = batch
    return jnp.mean((predict(params, x) - y) ** 2)


def adam_init(params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"mu": zeros, "nu": zeros, "count": jnp.zeros((), jnp.int32)}


def _train_step(params, opt_state, batch, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    count = opt_state["count"] + 1
    mu = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, opt_state["mu"], grads)
    nu = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, opt_state["nu"], grads)
    mu_hat = jax.tree_util.tree_map(lambda m: m / (1 - b1**count), mu)
    nu_hat = jax.tree_util.tree_map(lambda v: v / (1 - b2**count), nu)
    params = jax.tree_util.tree_map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + eps), params, mu_hat, nu_hat)
    return params, {"mu": mu, "nu": nu, "count": count}, loss


train_step = jax.jit(_train_step)


@partial(jax.jit, donate_argnums=(0,))
def ema_update(ema_params, params, decay=0.99):
    return jax.tree_util.tree_map(lambda e, p: decay * e + (1 - decay) * p, ema_params, params)


@jax.jit
def evaluate(params, batch):
    return loss_fn(params, batch)


def make_batches(key, steps, batch_size=64):
    true_w = jnp.linspace(-1.0, 1.0, 8)[:, None]
    for _ in range(steps):
        key, sub = jax.random.split(key)
        x = jax.random.normal(sub, (batch_size, 8))
        yield x, x @ true_w


def main(steps=50):
    key = jax.random.PRNGKey(0)
    params = init_params(key)
    opt_state = adam_init(params)
    ema_params = jax.tree_util.tree_map(jnp.copy, params)
    eval_batch = next(make_batches(jax.random.PRNGKey(1), 1))

    for step, batch in enumerate(make_batches(key, steps)):
        params, opt_state, loss = train_step(params, opt_state, batch)
        new_ema = ema_update(ema_params, params)
        if step % 10 == 0:
            print(f"step {step:3d}  loss {float(loss):.4f}  ema loss {float(evaluate(ema_params, eval_batch)):.4f}")
        ema_params = new_ema

    print(f"final loss {float(evaluate(params, eval_batch)):.4f}")
    return params, ema_params


if __name__ == "__main__":
    main()

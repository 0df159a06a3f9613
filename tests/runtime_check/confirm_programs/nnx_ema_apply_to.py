"""flax's optimization cookbook: an EMA of the model's parameters, evaluated through
``ema.apply_to(model)``, whose Layers hold the EMA's own Variables (flax 0.12.8)."""

import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
        return self.lin(x)


@nnx.jit
def train_step(model, optimizer, ema, x):
    grads = nnx.grad(lambda m: (m(x) ** 2).mean())(model)
    optimizer.update(model, grads)
    ema.update(model)


@nnx.jit
def eval_step(model, x):
    return (model(x) ** 2).mean()


def main():
    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    ema = nnx.EMA(model, decay=0.9)
    ema_model = ema.apply_to(model)
    x = jnp.ones((4, 2))
    for _ in range(5):
        train_step(model, optimizer, ema, x)
    print("ema", round(float(eval_step(ema_model, x)), 4))


if __name__ == "__main__":
    main()

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


@nnx.jit
def train_step(model, optimizer, batch):
    loss, grads = nnx.value_and_grad(lambda m: ((m(batch) - 1.0) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss


@jax.jit
def ema_update(ema, params):
    return jax.tree.map(lambda e, p: 0.9 * e + 0.1 * p, ema, params)


def main():
    model = Model(nnx.Rngs(0, dropout=1))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    ema = jax.tree.map(jnp.zeros_like, nnx.state(model, nnx.Param))
    for i in range(4):
        loss = train_step(model, optimizer, jnp.full((8, 4), 0.1 * i))
        ema = ema_update(ema, nnx.state(model, nnx.Param))
    print("loss", float(loss))


if __name__ == "__main__":
    main()

"""flax's performance guide, cell by cell: the objects split together, a jax.jit step that
merges them, updates them in place and returns their whole state, ``nnx.update`` after the
loop, and the model evaluated after that.  The update writes back every Variable the
donation deleted, so the evaluation reads the new arrays only."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(2, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.out = nnx.Linear(8, 3, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.bn(self.linear(x))))


@jax.jit
def train_step(graphdef, state, x, y):
    model, optimizer, metrics = nnx.merge(graphdef, state)

    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    metrics.update(loss=loss)
    state = nnx.state((model, optimizer, metrics))
    return loss, state


if __name__ == "__main__":
    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))
    graphdef, state = nnx.split((model, optimizer, metrics))
    x, y = jnp.ones((16, 2)), jnp.zeros((16, 3))
    for _ in range(5):
        loss, state = train_step(graphdef, state, x, y)
    nnx.update((model, optimizer, metrics), state)
    model.eval()
    print("eval", round(float(((model(x) - y) ** 2).mean()), 3), "steps", int(optimizer.step[...]))

"""flax's performance guide, in order: an ``nnx.jit`` step, the same step through
``nnx.cached_partial`` (which keeps clones of the model and the optimizer sharing their
Variables), then the functional API on a split of both, ``nnx.update`` after the loop.
The cached partial is not called again before ``nnx.update``."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx


@nnx.jit
def train_step(model, optimizer, x):
    grads = nnx.grad(lambda m: (m(x) ** 2).mean())(model)
    optimizer.update(model, grads)


@jax.jit
def jax_train_step(graphdef, state, x):
    model, optimizer = nnx.merge(graphdef, state)
    grads = nnx.grad(lambda m: (m(x) ** 2).mean())(model)
    optimizer.update(model, grads)
    return nnx.state((model, optimizer))


if __name__ == "__main__":
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    cached_train_step = nnx.cached_partial(train_step, model, optimizer)
    for _ in range(2):
        cached_train_step(jnp.ones((4, 2)))
    graphdef, state = nnx.split((model, optimizer))
    for _ in range(3):
        state = jax_train_step(graphdef, state, jnp.ones((4, 2)))
    nnx.update((model, optimizer), state)
    print("steps", int(optimizer.step[...]), round(float(model.kernel[...].sum()), 3))

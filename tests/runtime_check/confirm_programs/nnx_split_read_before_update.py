"""The functional API with a read of the Module before nnx.update: its Variables
still hold the arrays the first step would delete, so the donation must be refuted."""
import jax
import jax.numpy as jnp
from flax import nnx


@jax.jit
def step(graphdef, state, x):
    model = nnx.merge(graphdef, state)
    model.kernel[...] = model.kernel[...] + x.sum()
    return nnx.state(model)


if __name__ == "__main__":
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    for _ in range(3):
        state = step(graphdef, state, jnp.ones(2))
    print("before update", model.kernel.shape)
    print("read", round(float(model.kernel[...].sum()), 3))
    nnx.update(model, state)
    print("updated", round(float(model.kernel[...].sum() - nnx.Linear(2, 3, rngs=nnx.Rngs(0)).kernel[...].sum()), 3))

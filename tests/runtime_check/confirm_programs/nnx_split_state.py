"""nnx's functional API, as flax's performance guide writes it: split once, a jax.jit
step on the state, the objects updated after the loop.  The Module still holds the
state's Variables until ``nnx.update``, and nothing reads it before."""
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
    nnx.update(model, state)
    print("updated", round(float(state["kernel"][...].sum() - nnx.Linear(2, 3, rngs=nnx.Rngs(0)).kernel[...].sum()), 3))

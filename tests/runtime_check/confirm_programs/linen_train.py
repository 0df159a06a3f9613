import sys

import jax
import jax.numpy as jnp

from linen_models import create_state


@jax.jit
def train_step(state, batch):
    def loss_fn(params):
        return ((state.apply_fn(params, batch) - 1.0) ** 2).mean()

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def main(steps, ema):
    state = create_state(jax.random.PRNGKey(0), ema=ema)
    for i in range(steps):
        state, loss = train_step(state, jnp.full((8, 4), 0.1 * i))
    print("loss", float(loss))


if __name__ == "__main__":
    main(int(sys.argv[1]), "--ema" in sys.argv)

"""optax's SAM test, in small: the state caches the params array itself, so `step(params, state)`
passes one array twice. Donating either argument alone is rejected by jax ("Attempt to donate a
buffer which is also used by the same call"), so confirm must refute both and run as written."""

from typing import NamedTuple

import jax
import jax.numpy as jnp


class State(NamedTuple):
    count: jax.Array
    cache: jax.Array


@jax.jit
def step(params, state):
    new = params - 0.1 * state.cache
    return new, State(state.count + 1, new)


def main():
    params = jnp.ones((256,))
    state = State(jnp.zeros((), jnp.int32), params)
    for _ in range(4):
        params, state = step(params, state)
    print("final", float(params.sum()))


main()

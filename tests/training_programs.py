"""Small JAX programs shared by the fixer's tests."""

import textwrap

# A bare @jax.jit whose first argument is dead after every call: one JXM001.
TRAIN = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    @jax.jit
    def update(state, grad):
        return state - 0.1 * grad


    def train(steps):
        state = jnp.ones((4,))
        for _ in range(steps):
            grad = jnp.ones((4,))
            state = update(state, grad)
        return state
    """
)

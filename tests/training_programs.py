"""Small JAX programs shared by the tests (fixer, CLI, server)."""

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


# The README's motivating example: the state is rebound by every call of a
# jitted step without donation -> JXM001 at the @jax.jit definition (line 4).
MISSED_DONATION = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(state, batch):
        return state + batch.sum()

    def train(batches):
        state = jnp.zeros(3)
        for batch in batches:
            state = step(state, batch)
        return state
    """)

"""JXM001 missed-donation."""

from jaxmem.findings import Confidence, Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM001",
    name="missed-donation",
    severity=Severity.WARNING,
    summary="argument dead after every call and rebound from the result, but not donated",
    fixable=True,
    doc='''
    ## What it does
    Finds parameters of a jitted function that could be donated: at every
    call site the argument is a value that is never read again, and the
    call's result (or a value taken from it) is assigned back to it, as in
    `state = train_step(state, batch)`.

    ## Why is this bad?
    Without donation XLA must keep the old buffers alive while it writes
    the new ones, so an update holds two copies of the state at its peak.
    For a model trained with Adam that is parameters plus two moments, paid
    twice. Donating lets XLA write the result into the input's memory.

    ## Example
    ```python
    @jax.jit
    def train_step(state, batch):
        ...
    state = train_step(state, batch)
    ```

    ## Use instead
    ```python
    @partial(jax.jit, donate_argnums=0)
    def train_step(state, batch):
        ...
    ```

    ## Fix safety
    `jaxmem-fix` applies high-confidence findings: the argument is a local
    value of the calling scope, rebound by the call, with no alias, escape
    or later read on any path, at every call site in the run. Medium
    confidence (the value belongs to the caller or an attribute, or the
    function is public and may have callers outside the project) is applied
    only with `--unsafe-fixes`. Donation needs an output with the same
    shape and dtype to be useful: `jaxmem verify` confirms it on the backend.
    ''',
    invalid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit  # JXM001
            def step(state, batch):
                return state + batch.sum()

            def train(batches):
                state = jnp.zeros(4)
                for batch in batches:
                    state = step(state, batch)
                return state

            print(train([jnp.ones(2), jnp.ones(2)]))
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            fixed="""
            import jax
            import jax.numpy as jnp
            from functools import partial

            @partial(jax.jit, donate_argnums=0)  # JXM001
            def step(state, batch):
                return state + batch.sum()

            def train(batches):
                state = jnp.zeros(4)
                for batch in batches:
                    state = step(state, batch)
                return state

            print(train([jnp.ones(2), jnp.ones(2)]))
            """,
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            def update(params, opt_state, grads):
                return params - 0.1 * grads, opt_state + 1

            update_fn = jax.jit(update)  # JXM001

            params, opt_state = jnp.ones(8), jnp.zeros(8)
            for i in range(3):
                params, opt_state = update_fn(params, opt_state, jnp.ones(8))
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            fixed="""
            import jax
            import jax.numpy as jnp

            def update(params, opt_state, grads):
                return params - 0.1 * grads, opt_state + 1

            update_fn = jax.jit(update, donate_argnums=(0, 1))  # JXM001

            params, opt_state = jnp.ones(8), jnp.zeros(8)
            for i in range(3):
                params, opt_state = update_fn(params, opt_state, jnp.ones(8))
            """,
        ),
        Example(
            """
            from functools import partial
            import jax

            class Trainer:
                def __init__(self, state):
                    self.state = state
                    self._step = jax.jit(self.step)  # JXM001

                def step(self, state, batch):
                    return state + batch

                def fit(self, batches):
                    for batch in batches:
                        self.state = self._step(self.state, batch)
            """,
            confidence=Confidence.MEDIUM,
            note="an attribute is owned outside the method: medium confidence",
        ),
    ),
    valid=(
        Example(
            """
            import jax

            @jax.jit
            def step(state, batch):
                return state + batch

            def train(state, batch):
                new_state = step(state, batch)
                print(state)  # still read: not dead
                return new_state
            """
        ),
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,))
            def step(state, batch):
                return state + batch

            def train(state, batches):
                for batch in batches:
                    state = step(state, batch)
                return state
            """,
            note="already donated",
        ),
        Example(
            """
            import jax

            @jax.jit
            def step(state, batch):
                return state + batch

            def run(state, batch):
                state = step(state, batch)
                return state

            def other(state, batch):
                out = step(state, batch)
                return out, state  # this call site reads state later
            """,
            note="call sites disagree: no proposal",
        ),
    ),
)

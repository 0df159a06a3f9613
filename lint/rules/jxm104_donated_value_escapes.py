"""JXM104 donated-value-escapes."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM104",
    name="donated-value-escapes",
    severity=Severity.WARNING,
    summary="donated value outlives the call elsewhere (global, closure, container, attribute)",
    doc='''
    ## What it does
    Finds donated values that something else still holds after the call:
    a list or dict they were stored in, an attribute, a global, a closure
    that captured them, a generator that yielded them, or an attribute that
    is not reassigned before the function returns.

    ## Why is this bad?
    The holder now refers to a deleted buffer. Whoever reads it later, in
    code this analysis cannot see, gets "Array has been deleted".

    ## Example
    ```python
    history.append(params)
    params = update(params, grads)      # update donates params
    ```

    ## Use instead
    ```python
    history.append(jnp.copy(params))    # or store host copies: jax.device_get
    params = update(params, grads)
    ```

    ## Known problems
    Like JXM101, not reported for `nnx.jit` functions: flax nnx writes a
    donated Module's (an Optimizer's, a Metric's) new arrays back into its
    Variables, so a global or closure that holds the Module sees them
    (flax 0.12.8). A plain array donated to `nnx.jit` is deleted as with
    `jax.jit`: it is reported when jaxmem sees it made by a `jnp`
    constructor or as a PRNG key, and not otherwise.

    ## Fix safety
    No automatic fix.
    ''',
    invalid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            update = jax.jit(lambda p, g: p - g, donate_argnums=0)

            params = jnp.ones(3)
            history = []
            for step in range(3):
                history.append(params)
                params = update(params, jnp.ones(3))  # JXM104
            """
        ),
        Example(
            """
            import jax

            class Trainer:
                def __init__(self, state):
                    self.state = state
                    self._step = jax.jit(self.step, donate_argnums=0)

                def step(self, state):
                    return state + 1

                def peek(self):
                    return self._step(self.state)  # JXM104
            """,
            note="self.state still refers to the deleted buffer",
        ),
    ),
    valid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            update = jax.jit(lambda p, g: p - g, donate_argnums=0)

            params = jnp.ones(3)
            history = []
            for step in range(3):
                params = update(params, jnp.ones(3))
                history.append(params.sum())
            """
        ),
        Example(
            """
            from flax import nnx

            @nnx.jit(donate_argnums=(0, 1))
            def train_step(model, optimizer, batch):
                grads = nnx.grad(lambda m: m(batch).mean())(model)
                optimizer.update(model, grads)

            def loop_step(batch):
                train_step(model, optimizer, batch)
            """,
            note="nnx writes the new arrays back into `model` and `optimizer`, which the globals still name",
        ),
    ),
)

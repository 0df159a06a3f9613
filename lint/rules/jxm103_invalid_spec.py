"""JXM103 invalid-donation-spec."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM103",
    name="invalid-donation-spec",
    severity=Severity.ERROR,
    summary="invalid donation spec: index out of range, unknown name, overlaps static",
    doc='''
    ## What it does
    Checks `donate_argnums` and `donate_argnames` against the jitted
    function's signature: an index past the last positional parameter, a
    name that is not a parameter, or a parameter that is both donated and
    static.

    ## Why is this bad?
    JAX rejects some of these when the function is traced and silently
    ignores others, so the donation you meant does not happen.

    ## Example
    ```python
    @partial(jax.jit, donate_argnums=(2,))
    def step(state, batch): ...
    ```

    ## Use instead
    ```python
    @partial(jax.jit, donate_argnums=(0,))
    def step(state, batch): ...
    ```

    ## Fix safety
    No automatic fix.
    ''',
    invalid=(
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, donate_argnums=(2,))  # JXM103
            def step(state, batch):
                return state + batch
            """
        ),
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, static_argnums=(1,), donate_argnums=(0, 1))  # JXM103
            def step(state, n):
                return state * n
            """
        ),
        Example(
            """
            import jax

            def step(state, batch):
                return state + batch

            f = jax.jit(step, donate_argnames=("stat",))  # JXM103
            """
        ),
    ),
    valid=(
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,), static_argnames=("n",))
            def step(state, n):
                return state * n
            """
        ),
    ),
)

"""JXM105 donated-in-loop-not-rebound."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM105",
    name="donated-in-loop-not-rebound",
    severity=Severity.ERROR,
    summary="donated inside a loop without being rebound: the second iteration reads a deleted array",
    doc='''
    ## What it does
    Finds a donated argument inside a loop that the loop does not rebind
    before the next iteration passes it again.

    ## Why is this bad?
    The first iteration deletes the buffer; the second passes the deleted
    array and fails with "Buffer has been deleted or donated" (checked on
    jax 0.10.2, CPU backend).

    ## Example
    ```python
    for batch in loader:
        loss = step(params, batch)       # step donates params
    ```

    ## Use instead
    ```python
    for batch in loader:
        params, loss = step(params, batch)
    ```

    ## Fix safety
    No automatic fix.
    ''',
    invalid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            scaled = jax.jit(lambda p, b: p * b, donate_argnums=0)

            params = jnp.ones(3)
            for i in range(2):
                out = scaled(params, jnp.ones(3))  # JXM105
            """,
            runnable=True,
            raises="has been deleted",
        ),
    ),
    valid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            step = jax.jit(lambda p, b: (p - b, (p * b).sum()), donate_argnums=0)

            params = jnp.ones(3)
            for i in range(2):
                params, loss = step(params, jnp.ones(3))
            """
        ),
    ),
)

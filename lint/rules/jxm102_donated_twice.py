"""JXM102 donated-buffer-passed-twice."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM102",
    name="donated-buffer-passed-twice",
    severity=Severity.ERROR,
    summary="a donated value is also passed in another position of the same call",
    doc='''
    ## What it does
    Finds calls that pass the same array in a donated position and in
    another position (or twice inside one donated pytree).

    ## Why is this bad?
    XLA cannot both reuse a buffer for an output and read it as another
    input: JAX rejects the call at run time.

    ## Example
    ```python
    out = f(x, x)          # f donates parameter 0
    ```

    ## Use instead
    ```python
    out = f(x, jnp.copy(x))
    ```

    ## Fix safety
    No automatic fix.
    ''',
    invalid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            f = jax.jit(lambda a, b: a + b, donate_argnums=0)
            x = jnp.ones(3)
            y = f(x, x)  # JXM102
            """,
            runnable=True,
            raises="previously donated in the same call",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            g = jax.jit(lambda pair: pair[0] + pair[1], donate_argnums=0)
            x = jnp.ones(3)
            y = g((x, x))  # JXM102
            """,
            runnable=True,
            raises="previously donated in the same call",
            note="twice inside one pytree",
        ),
    ),
    valid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            f = jax.jit(lambda a, b: a + b, donate_argnums=0)
            x = jnp.ones(3)
            y = f(x, jnp.copy(x))
            """
        ),
    ),
)

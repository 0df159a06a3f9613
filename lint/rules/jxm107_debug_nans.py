"""JXM107 debug-nans-disables-donation."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM107",
    name="debug-nans-disables-donation",
    severity=Severity.INFO,
    summary="`jax_debug_nans` is enabled: JAX silently turns donation off",
    doc='''
    ## What it does
    Finds `jax.config.update("jax_debug_nans", True)` in a project that
    donates buffers.

    ## Why is this bad?
    With `jax_debug_nans` on, JAX re-runs computations to find NaNs and
    silently disables donation, so donated arguments cost their memory
    twice. Fine while debugging; costly when left on.

    ## Example
    ```python
    jax.config.update("jax_debug_nans", True)
    ```

    ## Use instead
    Enable it from the environment only while debugging:
    `JAX_DEBUG_NANS=True python train.py`.

    ## Fix safety
    No automatic fix.
    ''',
    invalid=(
        Example(
            """
            import jax

            jax.config.update("jax_debug_nans", True)  # JXM107

            step = jax.jit(lambda s: s + 1, donate_argnums=0)
            """
        ),
    ),
    valid=(
        Example(
            """
            import jax

            jax.config.update("jax_debug_nans", False)

            step = jax.jit(lambda s: s + 1, donate_argnums=0)
            """
        ),
    ),
)

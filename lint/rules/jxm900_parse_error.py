"""JXM900 parse-error."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM900",
    name="parse-error",
    severity=Severity.ERROR,
    summary="file could not be parsed or read",
    doc='''
    ## What it does
    Reports a file jaxmem could not read (undecodable bytes, a NUL byte)
    or parse (a syntax error). The rest of the run goes on.

    ## Why is this bad?
    Nothing in that file was analysed, so its donations are unchecked.

    ## Example
    ```python
    def step(state:
    ```

    ## Use instead
    Fix the syntax error, or exclude the file in `[tool.jaxmem] exclude`.

    ## Fix safety
    No automatic fix.
    ''',
    invalid=(
        Example(
            """
            import jax

            @jax.jit
            def step(state:  # JXM900
            """
        ),
    ),
)

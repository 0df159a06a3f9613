"""JXM106 pmap-keyword-donation."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM106",
    name="pmap-keyword-donation",
    severity=Severity.ERROR,
    summary="a jax.pmap call passes a donated parameter by keyword: pmap silently does not donate it",
    doc='''
    ## What it does
    Finds calls of a `jax.pmap` function that pass a parameter listed in
    `donate_argnums` by keyword.

    ## Why is this bad?
    `jax.pmap` has no `donate_argnames` and only donates positional
    arguments: a keyword-passed argument is silently not donated, so the
    memory you expected to save is not saved (checked on jax 0.10.2).

    ## Example
    ```python
    p_step = jax.pmap(step, axis_name="batch", donate_argnums=(0,))
    state = p_step(state=state, batch=batch)
    ```

    ## Use instead
    ```python
    state = p_step(state, batch)
    ```

    ## Fix safety
    No automatic fix.
    ''',
    invalid=(
        Example(
            """
            import jax

            def step(state, batch):
                return state + batch

            p_step = jax.pmap(step, axis_name="batch", donate_argnums=(0,))

            def train(state, batches):
                for batch in batches:
                    state = p_step(state=state, batch=batch)  # JXM106
                return state
            """
        ),
    ),
    valid=(
        Example(
            """
            import jax

            def step(state, batch):
                return state + batch

            p_step = jax.pmap(step, axis_name="batch", donate_argnums=(0,))

            def train(state, batches):
                for batch in batches:
                    state = p_step(state, batch)
                return state
            """
        ),
    ),
)

"""JXM002 dead-argument-not-rebound."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM002",
    name="dead-argument-not-rebound",
    severity=Severity.INFO,
    summary="argument dead after every call but not rebound: donation helps only if an output matches",
    doc='''
    ## What it does
    Notes parameters whose argument is never read after any call, but is
    not rebound from the result either: typically a fresh batch in
    `state = step(state, next(batches))`.

    ## Why is this bad?
    It is not wrong. Donating such an argument is safe, but XLA can only
    reuse its buffer when some output has the same shape and dtype, which
    a static tool cannot see. Reported at low confidence, so it appears
    only with `--min-confidence low`.

    ## Example
    ```python
    for batch in loader:
        state = step(state, batch)   # batch is dead, but no output is a batch
    ```

    ## Use instead
    Run `jaxmem verify` on the function: it compiles it with the donation
    and says whether an output took the buffer.

    ## Fix safety
    No automatic fix: the donation is safe but usually useless.
    ''',
    invalid=(
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,))  # JXM002
            def step(state, batch):
                return state + batch

            def train(state, batches):
                for batch in batches:
                    state = step(state, batch)
                return state
            """,
            note="reported on the decorator line",
        ),
    ),
    valid=(
        Example(
            """
            import jax

            @jax.jit
            def step(state, batch):
                return state + batch.sum()

            def train(state, batches):
                for batch in batches:
                    state = step(state, batch)
                    print(batch.mean())
                return state
            """
        ),
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,))
            def step(state, batch):
                return state + batch.sum()  # batch is reduced away: no output can take it

            def train(state, batches):
                for batch in batches:
                    state = step(state, batch)
                return state
            """,
            note="not reported: no output is built from `batch` by shape-preserving operations",
        ),
    ),
)

"""JXM003 state-update-not-donated."""

from jaxmem.findings import Confidence, Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM003",
    name="state-update-not-donated",
    severity=Severity.INFO,
    summary="jitted function returns an update of a parameter it does not donate, and no call of it is visible",
    doc='''
    ## What it does
    Notes parameters of a jitted function that no call in the project
    reaches (library code: a trainer builds and jits `train_step`, its
    users call it), when the body returns an update of the parameter: an
    output built from it by shape- and dtype-preserving operations
    (arithmetic, `tree_map` over it, `optax.apply_updates`,
    `.replace(...)`, `.apply_gradients(...)`), so that output can take its
    buffers.

    ## Why is this bad?
    Without donation, `state = train_step(state, batch)` holds the old and
    the new state at once: twice the memory of the state at the step's
    peak. JXM001 proposes the donation when every call site leaves the
    argument dead; with no call in sight, whether the callers read
    `state` again is unknown. Reported at low confidence, so it appears
    only with `--min-confidence low`.

    ## Known problems
    Parameters that reach an output only through calls jaxmem does not
    know (`model.apply(params, x)`) are not reported: for those nothing
    shows an update. Nor are `eqx.filter_jit` functions (equinox donates
    through a mode over all arguments), `nnx.jit` functions (nnx Modules
    share their arrays with other objects, which only a call site can show
    are not read again) or immediate calls (`jax.jit(f)(x)`).

    A call jaxmem cannot resolve (through a dict, a property, a parameter
    of another name) counts as no call. A jitted function handed by name,
    in its own file, to a tracing transform (`jax.lax.scan(step, ...)`,
    `lax.fori_loop(0, n, body_fn, x)`, `jax.vmap(step)`) runs traced, where
    donation is a no-op: it is not reported; handed on in another file, or
    under another name, the note is useless. A helper
    whose callers keep the argument (`tree_bias_correction(mu, ...)` with
    `mu` kept in the optimizer state) must not donate it: read the callers
    before following the note.

    ## Example
    ```python
    @jax.jit
    def train_step(state, batch):  # called by the package's users
        grads = jax.grad(loss)(state.params, batch)
        return state.apply_gradients(grads=grads)
    ```

    ## Use instead
    If the callers rebind the state from the result
    (`state = train_step(state, batch)`), donate it:
    `@partial(jax.jit, donate_argnums=(0,))`. Document that the argument
    is donated: a caller that reads it after the call gets "Array has been
    deleted".

    ## Fix safety
    No automatic fix, not even with `--unsafe-fixes` (like JXM002):
    whether the donation is safe depends on callers jaxmem cannot see.
    ''',
    invalid=(
        Example(
            """
            import jax

            @jax.jit  # JXM003
            def train_step(state, batch):
                return state - 0.1 * batch
            """,
            confidence=Confidence.LOW,
            note="reported on the decorator line; nothing in the file calls train_step",
        ),
        Example(
            """
            import jax
            import optax

            def make_update(tx):
                def update(params, opt_state, grads):
                    updates, opt_state = tx.update(grads, opt_state, params)
                    return optax.apply_updates(params, updates), opt_state

                update_step = jax.jit(update, donate_argnums=(1,))  # JXM003
                return update_step
            """,
            confidence=Confidence.LOW,
            note="`params` is returned updated; `opt_state` is donated already",
        ),
    ),
    valid=(
        Example(
            """
            import jax

            @jax.jit
            def train_step(state, batch):
                return state - 0.1 * batch

            def train(state, batches):
                for batch in batches:
                    state = train_step(state, batch)
                return state
            """,
            note="a call is visible: JXM001 decides from it",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def evaluate(params, batch):
                return jnp.mean((batch @ params) ** 2)
            """,
            note="no output is built from `params` by shape-preserving operations",
        ),
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,))
            def perturb(state, key):
                return state + jax.random.normal(key, state.shape)
            """,
            note="`state` is donated already and `key` is only used as a PRNG key",
        ),
    ),
)

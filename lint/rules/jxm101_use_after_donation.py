"""JXM101 use-after-donation."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM101",
    name="use-after-donation",
    severity=Severity.ERROR,
    summary="value read after it was donated (crash: \"Array has been deleted\")",
    doc='''
    ## What it does
    Finds reads of a value after it was passed to a jitted function in a
    donated position, on any path before it is rebound, directly or
    through an alias taken before the call (`old = state`).

    ## Why is this bad?
    Donation hands the buffer to XLA, which deletes the input. Any later
    use raises `RuntimeError: Array has been deleted`, often far from the
    call and only on the path that reads it. Reading metadata is fine:
    `.shape` (also `x.shape[0]`), `.dtype`, `.ndim`, `.size`, `.sharding`,
    `len(x)`, `jnp.shape(x)`, `np.shape(x)`, `jax.typeof(x)`, as are
    `.is_deleted()`, `.delete()` and host NumPy data (never deleted).
    Passing a dict to a function of the same file reads only the entries
    it may read: `check(b)` reads `b["k"]` when `check` uses its parameter
    only as `b["k"]` (any other use reads every entry).

    ## Known problems
    JAX deletes a donated input only when an output can reuse its buffer;
    otherwise it warns "Some donated buffers were not usable" and the input
    stays readable. When jaxmem cannot show that an output has the
    parameter's shape and dtype, or when another donated parameter reaches
    the same outputs (`x + y`: one buffer, two donated inputs), the message
    says the read *may* raise (medium confidence). Per-entry reads through a helper assume `p["k"]`
    reads only entry `"k"` (true of dicts, lists, tuples and pytree
    containers), and are followed only into functions of the same file.
    An `nnx.jit` argument stays readable when it is a Module (an Optimizer,
    a Metric): nnx writes its new arrays back (flax 0.12.8). So reads after
    an `nnx.jit` call are reported only for arguments jaxmem sees made as
    plain arrays (`jnp.ones(3)`, a PRNG key), which it deletes as `jax.jit`
    does.

    ## Example
    ```python
    new_params = update(params, grads)   # update donates params
    print(jnp.linalg.norm(params))       # crash
    ```

    ## Use instead
    ```python
    print(jnp.linalg.norm(params))
    params = update(params, grads)
    ```

    ## Fix safety
    No automatic fix: either move the read before the call, use the
    result, or stop donating the parameter.
    ''',
    invalid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            def scale(x):
                return x * 2

            f = jax.jit(scale, donate_argnums=0)

            x = jnp.ones(3)
            y = f(x)
            print(x)  # JXM101
            """,
            runnable=True,
            raises="Array has been deleted",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,))
            def update(params, grads):
                return params - 0.1 * grads

            params = jnp.ones(4)
            old = params
            params = update(params, jnp.ones(4))
            print(old.sum())  # JXM101
            """,
            runnable=True,
            raises="Array has been deleted",
            note="read through an alias taken before the call",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp
            from functools import partial

            @partial(jax.jit, donate_argnums=0)
            def update(params_and_state, grads):
                params, state = params_and_state
                return params - 0.1 * grads, state + 1.0

            params = jnp.ones(4)
            state = jnp.zeros(4)
            new_params, state = update((params, state), jnp.ones(4))
            print(params.sum())  # JXM101
            """,
            runnable=True,
            raises="Array has been deleted",
            note="an element of a pytree written out in the call",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,))
            def update(params, grads):
                return params - 0.1 * grads

            def train(flag):
                params = jnp.ones(4)
                new = update(params, jnp.ones(4))
                if flag:
                    return new
                return params  # JXM101

            print(train(False))
            """,
            runnable=True,
            raises="Array has been deleted",
            note="only one branch reads it",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            double = jax.jit(lambda x: x * 2, donate_argnums=0)

            x = jnp.ones(3)
            y = x + double(x)  # JXM101
            """,
            runnable=True,
            raises="Array has been deleted",
            note="loaded before the call, used after it in the same expression",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp
            from functools import partial

            @partial(jax.jit, donate_argnames=("q", "cache"))
            def attend(q, cache):
                return q * 2, cache + 1

            def check(b):
                return float(b["cache"].sum())

            b = {"q": jnp.ones(3), "cache": jnp.ones(4)}
            out = attend(q=b["q"], cache=b["cache"])
            check(b)  # JXM101
            """,
            runnable=True,
            raises="Array has been deleted",
            note="a helper reads a donated entry of the dict passed to it (reported for `b[\"cache\"]` only)",
        ),
    ),
    valid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            f = jax.jit(lambda x: x * 2, donate_argnums=0)

            x = jnp.ones(3)
            shape = x.shape
            x = f(x)
            print(x, shape, x.dtype)
            """
        ),
        Example(
            """
            import jax

            @jax.jit
            def inner(x):
                return x + 1

            step = jax.jit(inner, donate_argnums=0)

            @jax.jit
            def outer(x):
                y = step(x)
                return x + y  # traced: donation inside jit is a no-op
            """
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp
            from functools import partial

            @partial(jax.jit, donate_argnames=("q", "cache"))
            def attend(q, cache):
                return q * 2, cache + 1

            def report(b, label):
                return label, b["lengths"].sum()

            b = {"q": jnp.ones(3), "cache": jnp.ones(4), "lengths": jnp.ones(2)}
            out = attend(q=b["q"], cache=b["cache"])
            report(b, "step")  # reads only b["lengths"], which was not donated
            """
        ),
    ),
)

"""JXM201 unusable-donation (runtime verifier)."""

from jaxmem.findings import Severity
from jaxmem.lint.rules.base import Rule

RULE = Rule(
    code="JXM201",
    name="unusable-donation",
    severity=Severity.WARNING,
    summary="verifier: donated leaf not usable by any output (which leaf, why)",
    doc='''
    ## What it does
    Reported by `jaxmem verify`, not by the static analysis: the function
    was compiled with the donation on the real backend and a donated pytree
    leaf was not aliased to any output. The finding names the leaf
    (`params['dense']['kernel']`), its shape and dtype, and why: no output
    with that shape and dtype, a dtype that differs (bf16 in, f32 out),
    a sharding or memory-kind mismatch, an argument XLA pruned as unused,
    or `jax_debug_nans` turning donation off.

    ## Why is this bad?
    The donation does nothing but delete the input: no memory is saved,
    and JAX's own warning names no argument (and equinox suppresses it).

    ## Example
    ```python
    f = jax.jit(lambda x: x.astype(jnp.float32), donate_argnums=0)
    f(jnp.ones(8, jnp.bfloat16))   # bf16 input, f32 output: not aliased
    ```

    ## Use instead
    Donate only arguments an output can take, or make the output match.

    ## Fix safety
    No automatic fix; `jaxmem-fix --verified REPORT` applies only the
    donations the verifier confirmed.
    ''',
)

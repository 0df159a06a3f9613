"""What JAX (and friends) offer for jitting and donating, as a table.

Facts checked on jax 0.10.2: ``jax.jit`` infers ``donate_argnames`` from
``donate_argnums`` (and the reverse) through the signature unless both are
given; ``jax.pmap`` has ``donate_argnums`` only and ignores keyword-passed
arguments; equinox's ``filter_jit`` donates through ``donate=``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Transform:
    """One jit-like transform and the donation options it understands."""

    name: str
    argnums_kw: str | None = "donate_argnums"
    argnames_kw: str | None = "donate_argnames"
    static_argnums_kw: str | None = "static_argnums"
    static_argnames_kw: str | None = "static_argnames"
    mode_kw: str | None = None  # equinox: donate="all" | ...
    flags_kw: str | None = None  # haliax: donate_args=(True, False), one flag per positional argument
    flag_names_kw: str | None = None  # haliax: donate_kwargs={"name": True}, for keyword-passed arguments
    donates_keywords: bool = True
    keeps_module_args: bool = False  # flax nnx writes Module outputs back

    @property
    def is_pmap(self) -> bool:
        return not self.donates_keywords


JIT = Transform("jax.jit")
PJIT = Transform("pjit")
PMAP = Transform(
    "jax.pmap",
    argnames_kw=None,
    static_argnums_kw="static_broadcasted_argnums",
    static_argnames_kw=None,
    donates_keywords=False,
)
NNX_JIT = Transform("nnx.jit", keeps_module_args=True)
EQX_FILTER_JIT = Transform(
    "eqx.filter_jit",
    argnums_kw=None,
    argnames_kw=None,
    static_argnums_kw=None,
    static_argnames_kw=None,
    mode_kw="donate",
)
# haliax 1.3 (partitioning.py, ``_NamedJitWrapper.__call__``; run on 1.4.dev453 with jax 0.10.2):
# ``donate_args=True`` donates every positionally passed argument, a tuple gives one flag per
# position (missing ones False), ``donate_kwargs`` a dict of flags for keyword-passed arguments;
# an argument passed by keyword is never donated by ``donate_args``.
HALIAX_NAMED_JIT = Transform(
    "haliax.named_jit", argnums_kw=None, argnames_kw=None, static_argnums_kw=None, static_argnames_kw=None,
    flags_kw="donate_args", flag_names_kw="donate_kwargs",
)
PENZAI_VARIABLE_JIT = Transform("penzai.variable_jit")


def donation_option(transform: str, index: int | None, name: str, positional: int | None,
                    donated: tuple[frozenset[int], frozenset[str]] = (frozenset(), frozenset())) -> tuple[str, bool]:
    """How ``transform`` (a :class:`Transform` name) spells donating one parameter,
    and whether jaxmem-fix writes it.  ``index`` is None for a keyword-only
    parameter; ``positional`` counts the positional parameters, when known.
    haliax's ``named_jit`` takes a pytree of flags, one per argument
    (``donate_args=(True, False)``), which the fixer does not write; the flags
    keep what the definition already ``donated`` (positions, keyword names)."""
    if transform == HALIAX_NAMED_JIT.name:
        indices, names = donated
        if index is None:
            entries = ", ".join(f"'{n}': True" for n in sorted({*names, name}))
            return f"donate_kwargs={{{entries}}}", False
        count = max(positional or 0, index + 1)
        flags = ", ".join("True" if i == index or i in indices else "False" for i in range(count))
        return f"donate_args=({flags}{',' if count == 1 else ''})", False
    if index is None:
        return f"donate_argnames=('{name}',)", True
    return f"donate_argnums=({index},)", True

TRANSFORMS: dict[str, Transform] = {
    "jax.jit": JIT,
    "jax.api.jit": JIT,
    "jax.pmap": PMAP,
    "jax.pjit": PJIT,
    "jax.experimental.pjit.pjit": PJIT,
    "jax.experimental.pjit": PJIT,
    "flax.nnx.jit": NNX_JIT,
    "flax.experimental.nnx.jit": NNX_JIT,
    "equinox.filter_jit": EQX_FILTER_JIT,
    "haliax.named_jit": HALIAX_NAMED_JIT,
    "haliax.partitioning.named_jit": HALIAX_NAMED_JIT,  # where haliax 1.3 defines it
    "penzai.toolshed.jit_wrapper.variable_jit": PENZAI_VARIABLE_JIT,
    "penzai.core.variables.variable_jit": PENZAI_VARIABLE_JIT,
    "penzai.pz.variable_jit": PENZAI_VARIABLE_JIT,
}

PARTIAL_NAMES = frozenset({"functools.partial"})

# Attributes and methods of a jax.Array that stay usable after donation
# (checked on jax 0.10.2 with a deleted array).
BENIGN_ATTRIBUTES = frozenset(
    {"shape", "dtype", "ndim", "size", "sharding", "nbytes", "aval",
     "weak_type", "itemsize", "is_deleted", "delete",
     "keys"}  # a donated dict pytree keeps its keys; only the leaves are deleted
)

# Builtins that only look at a value's type or structure: fine on a donated
# array or pytree (checked on jax 0.10.2: len() of a deleted array works).
BENIGN_FUNCTIONS = frozenset({"len", "isinstance", "type", "id"})

# Eqx modes -> which parameters are donated.
EQX_MODES = {
    "all": "all",
    "warn": "all",
    "all-except-first": "all-except-first",
    "warn-except-first": "all-except-first",
    "none": "none",
}

# Callees that never keep a reference to their arguments (used to decide
# whether passing a value to a call lets it escape).
NON_RETAINING_ROOTS = frozenset({"jax", "numpy", "math", "logging", "optax", "einops", "chex"})
NON_RETAINING_BUILTINS = frozenset(
    {"print", "len", "isinstance", "float", "int", "str", "repr", "format",
     "min", "max", "sum", "abs", "round", "range", "enumerate", "zip", "type",
     "id", "hash", "bool", "any", "all", "sorted", "hasattr", "getattr", "callable"}
)


def transform_for(qualified: str | None, extra_wrappers=()) -> Transform | None:
    """The transform a qualified callee name denotes, if any.

    ``extra_wrappers`` (from config) match the qualified name exactly.
    """
    if qualified is None:
        return None
    if qualified in TRANSFORMS:
        return TRANSFORMS[qualified]
    if qualified in extra_wrappers:
        return Transform(qualified)
    return None

"""Before/after tables for jaxmem-fix's edit layer, one entry per definition form.

Shared by test_fix_edits.py (exact text) and test_fix_execution.py (the fixed
source runs under real JAX with its donated inputs deleted).
"""

from __future__ import annotations

import textwrap

from jaxmem.findings import DonationFix


def code(text: str) -> str:
    """Dedented source without the leading newline."""
    return textwrap.dedent(text).lstrip("\n")


def source_of(text: str) -> str:
    """The case's source: dedented, except CRLF/BOM cases, which are written out exactly."""
    return text if "\r\n" in text or text.startswith("\ufeff") else code(text)


def fixes_of(*triples) -> list[DonationFix]:
    """``DonationFix`` objects from ``(line, index, name)`` triples (or ``(line, index, name, mode)``)."""
    return [DonationFix(*fields) for fields in triples]


# (id, before, fixes, after, options, call): ``fixes`` are ``(line, index, name)``, plus
# equinox's ``donate=`` mode when the analysis chose one; ``call`` runs the fixed module
# (names x, y, z are fresh arrays); None when the form cannot run here.
FIX_CASES = [
    (
        "bare-decorator-adds-partial-import",
        """
        import jax


        @jax.jit
        def step(x, y):
            return x + y, x - y
        """,
        [(4, 0, "x")],
        """
        from functools import partial

        import jax


        @partial(jax.jit, donate_argnums=0)
        def step(x, y):
            return x + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "bare-from-import-reuses-partial",
        """
        from functools import partial

        from jax import jit


        @jit  # the update
        def step(x, y):
            return x + y, x - y
        """,
        [(6, 0, "x"), (6, 1, "y")],
        """
        from functools import partial

        from jax import jit


        @partial(jit, donate_argnums=(0, 1))  # the update
        def step(x, y):
            return x + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "bare-reuses-functools-module-alias",
        """
        import functools as ft
        import jax as j


        @j.jit
        def step(x, y):
            return x + y, x - y
        """,
        [(5, 1, "y")],
        """
        import functools as ft
        import jax as j


        @ft.partial(j.jit, donate_argnums=1)
        def step(x, y):
            return x + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "bare-partial-name-taken-imports-functools",
        """
        import jax

        partial = 3


        @jax.jit
        def step(x, y):
            return x + y, x - y
        """,
        [(6, 0, "x")],
        """
        import functools

        import jax

        partial = 3


        @functools.partial(jax.jit, donate_argnums=0)
        def step(x, y):
            return x + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "bare-decorator-factory-for-new-jax",
        """
        import jax


        @jax.jit
        def step(x, y):
            return x + y, x - y
        """,
        [(4, 0, "x")],
        """
        import jax


        @jax.jit(donate_argnums=0)
        def step(x, y):
            return x + y, x - y
        """,
        {"jax_version": "0.8.1"},
        "step(x, y)",
    ),
    (
        "bare-decorator-old-jax-keeps-partial",
        """
        import jax


        @jax.jit
        def step(x, y):
            return x + y, x - y
        """,
        [(4, 0, "x")],
        """
        from functools import partial

        import jax


        @partial(jax.jit, donate_argnums=0)
        def step(x, y):
            return x + y, x - y
        """,
        {"jax_version": "0.8.0"},
        "step(x, y)",
    ),
    (
        "called-decorator-gets-keyword",
        """
        import jax


        @jax.jit(static_argnames="n")
        def step(x, y, n=2):
            return x * n + y, x - y
        """,
        [(4, 0, "x")],
        """
        import jax


        @jax.jit(static_argnames="n", donate_argnums=0)
        def step(x, y, n=2):
            return x * n + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "partial-int-becomes-tuple",
        """
        from functools import partial

        import jax


        @partial(jax.jit, donate_argnums=0)
        def step(x, y):
            return x + y, x - y
        """,
        [(6, 1, "y")],
        """
        from functools import partial

        import jax


        @partial(jax.jit, donate_argnums=(0, 1))
        def step(x, y):
            return x + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "functools-partial-list-stays-list",
        """
        import functools

        import jax


        @functools.partial(jax.jit, donate_argnums=[0])
        def step(x, y, z):
            return x + y, x - y, z * 2
        """,
        [(6, 2, "z")],
        """
        import functools

        import jax


        @functools.partial(jax.jit, donate_argnums=[0, 2])
        def step(x, y, z):
            return x + y, x - y, z * 2
        """,
        {},
        "step(x, y, z)",
    ),
    (
        "argnames-string-becomes-tuple-same-quotes",
        """
        import functools as ft

        import jax


        @ft.partial(jax.jit, donate_argnames='x')
        def step(x, y):
            return x + y, x - y
        """,
        [(6, 1, "y")],
        """
        import functools as ft

        import jax


        @ft.partial(jax.jit, donate_argnames=('x', 'y'))
        def step(x, y):
            return x + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "wrapping-call",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update)
        """,
        [(8, 0, "x")],
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=0)
        """,
        {},
        "step(x, y)",
    ),
    (
        "wrapping-call-one-option-per-line",
        """
        import jax


        def update(x, y, n):
            return x * n + y, x - y


        step = jax.jit(
            update,
            static_argnums=2,  # n picks the kernel
        )
        """,
        [(8, 0, "x"), (8, 1, "y")],
        """
        import jax


        def update(x, y, n):
            return x * n + y, x - y


        step = jax.jit(
            update,
            static_argnums=2,  # n picks the kernel
            donate_argnums=(0, 1),
        )
        """,
        {},
        "step(x, y, 3)",
    ),
    (
        "wrapping-call-multiline-tuple-keeps-comments",
        """
        import jax


        def update(x, y, z):
            return x + y, x - y, z


        step = jax.jit(
            update,
            donate_argnums=(
                0,  # params
                1,  # optimizer state
            ),
        )
        """,
        [(8, 2, "z")],
        """
        import jax


        def update(x, y, z):
            return x + y, x - y, z


        step = jax.jit(
            update,
            donate_argnums=(
                0,  # params
                1,  # optimizer state
                2,
            ),
        )
        """,
        {},
        "step(x, y, z)",
    ),
    (
        "decorator-factory-applied-in-a-call",
        """
        import jax


        def update(x, y, n):
            return x * n + y, x - y


        step = jax.jit(static_argnums=2)(update)
        """,
        [(8, 0, "x")],
        """
        import jax


        def update(x, y, n):
            return x * n + y, x - y


        step = jax.jit(static_argnums=2, donate_argnums=0)(update)
        """,
        {},
        "step(x, y, 2)",
    ),
    (
        "self-attribute-jit-of-bound-method",
        """
        import jax


        class Trainer:
            def __init__(self):
                self._step = jax.jit(self.update)

            def update(self, x, y):
                return x + y, x - y
        """,
        [(6, 0, "x")],
        """
        import jax


        class Trainer:
            def __init__(self):
                self._step = jax.jit(self.update, donate_argnums=0)

            def update(self, x, y):
                return x + y, x - y
        """,
        {},
        "Trainer()._step(x, y)",
    ),
    (
        "decorated-method-counts-self",
        """
        from functools import partial

        import jax


        class Trainer:
            @partial(jax.jit, static_argnums=0)
            def step(self, x, y):
                return x + y, x - y
        """,
        [(7, 1, "x")],
        """
        from functools import partial

        import jax


        class Trainer:
            @partial(jax.jit, static_argnums=0, donate_argnums=1)
            def step(self, x, y):
                return x + y, x - y
        """,
        {},
        "Trainer().step(x, y)",
    ),
    (
        "pmap-wrapping-call",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        p_step = jax.pmap(update, axis_name="batch")
        """,
        [(8, 0, "x")],
        """
        import jax


        def update(x, y):
            return x + y, x - y


        p_step = jax.pmap(update, axis_name="batch", donate_argnums=0)
        """,
        {},
        "p_step(x, y)",
    ),
    (
        "pmap-bare-decorator-argnums-even-in-argnames-style",
        """
        import jax


        @jax.pmap
        def step(x, y):
            return x + y, x - y
        """,
        [(4, 1, "y")],
        """
        from functools import partial

        import jax


        @partial(jax.pmap, donate_argnums=1)
        def step(x, y):
            return x + y, x - y
        """,
        {"style": "argnames", "jax_version": "0.9.0"},
        "step(x, y)",
    ),
    (
        "pjit",
        """
        from jax.experimental.pjit import pjit


        def update(x, y):
            return x + y, x - y


        step = pjit(update)
        """,
        [(8, 0, "x")],
        """
        from jax.experimental.pjit import pjit


        def update(x, y):
            return x + y, x - y


        step = pjit(update, donate_argnums=0)
        """,
        {},
        "step(x, y)",
    ),
    (
        "project-wrapper-forwarding-donate-argnums",
        """
        import jax


        def compile_step(fn, donate_argnums=()):
            return jax.jit(fn, donate_argnums=donate_argnums)


        def update(x, y):
            return x + y, x - y


        step = compile_step(update)
        """,
        [(12, 0, "x")],
        """
        import jax


        def compile_step(fn, donate_argnums=()):
            return jax.jit(fn, donate_argnums=donate_argnums)


        def update(x, y):
            return x + y, x - y


        step = compile_step(update, donate_argnums=0)
        """,
        {},
        "step(x, y)",
    ),
    (
        "factory-returning-jit",
        """
        import jax


        def make_step():
            def update(x, y):
                return x + y, x - y

            return jax.jit(update)


        step = make_step()
        """,
        [(8, 0, "x")],
        """
        import jax


        def make_step():
            def update(x, y):
                return x + y, x - y

            return jax.jit(update, donate_argnums=0)


        step = make_step()
        """,
        {},
        "step(x, y)",
    ),
    (
        "cached-property-returning-jit",
        """
        import functools

        import jax


        class Trainer:
            def update(self, x, y):
                return x + y, x - y

            @functools.cached_property
            def step(self):
                return jax.jit(self.update)
        """,
        [(12, 1, "y")],
        """
        import functools

        import jax


        class Trainer:
            def update(self, x, y):
                return x + y, x - y

            @functools.cached_property
            def step(self):
                return jax.jit(self.update, donate_argnums=1)
        """,
        {},
        "Trainer().step(x, y)",
    ),
    (
        "argnames-style-configured",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update)
        """,
        [(8, 0, "x")],
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnames="x")
        """,
        {"style": "argnames"},
        "step(x, y)",
    ),
    (
        "auto-style-follows-the-file",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        eval_step = jax.jit(update, donate_argnames=['y'])
        step = jax.jit(update)
        """,
        [(9, 0, "x")],
        """
        import jax


        def update(x, y):
            return x + y, x - y


        eval_step = jax.jit(update, donate_argnames=['y'])
        step = jax.jit(update, donate_argnames='x')
        """,
        {},
        "step(x, y)",
    ),
    (
        "auto-style-falls-back-to-the-project",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update)
        """,
        [(8, 0, "x")],
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnames="x")
        """,
        {"project_style": "argnames"},
        "step(x, y)",
    ),
    (
        "keyword-only-parameter-uses-argnames",
        """
        import jax


        def update(x, *, y):
            return x + y, x - y


        step = jax.jit(update)
        """,
        [(8, None, "y")],
        """
        import jax


        def update(x, *, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnames="y")
        """,
        {},
        "step(x, y=y)",
    ),
    (
        "both-keywords-given-extends-both",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=0, donate_argnames="x")
        """,
        [(8, 1, "y")],
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=(0, 1), donate_argnames=("x", "y"))
        """,
        {},
        "step(x, y=y)",
    ),
    (
        "empty-tuple-gets-one-element-tuple",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=())
        """,
        [(8, 1, "y")],
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=(1,))
        """,
        {},
        "step(x, y)",
    ),
    (
        "nnx-jit-bare",
        """
        from flax import nnx


        @nnx.jit
        def step(x, y):
            return x + y, x - y
        """,
        [(4, 0, "x")],
        """
        from functools import partial

        from flax import nnx


        @partial(nnx.jit, donate_argnums=0)
        def step(x, y):
            return x + y, x - y
        """,
        {"jax_version": "0.9.0"},
        None,
    ),
    (
        "equinox-bare-all",
        """
        import equinox as eqx


        @eqx.filter_jit
        def step(x, y):
            return x + y, x - y
        """,
        [(4, 0, "x"), (4, 1, "y")],
        """
        import equinox as eqx


        @eqx.filter_jit(donate="all")
        def step(x, y):
            return x + y, x - y
        """,
        {},
        "step(x, y)",
    ),
    (
        "equinox-mode-chosen-by-the-analysis",
        """
        import equinox as eqx


        @eqx.filter_jit
        def step(x, y, z):
            return x + y, z
        """,
        [(4, 0, "x", "all"), (4, 1, "y", "all")],
        """
        import equinox as eqx


        @eqx.filter_jit(donate="all")
        def step(x, y, z):
            return x + y, z
        """,
        {},
        None,
    ),
    (
        "equinox-all-except-first",
        """
        import equinox as eqx


        @eqx.filter_jit
        def step(model, x, y):
            return x + y, x - y
        """,
        [(4, 1, "x"), (4, 2, "y")],
        """
        import equinox as eqx


        @eqx.filter_jit(donate="all-except-first")
        def step(model, x, y):
            return x + y, x - y
        """,
        {},
        "step(z, x, y)",
    ),
    (
        "equinox-mode-widened",
        """
        import equinox as eqx


        def update(model, x):
            return model, x


        step = eqx.filter_jit(update, donate='warn-except-first')
        """,
        [(8, 0, "model")],
        """
        import equinox as eqx


        def update(model, x):
            return model, x


        step = eqx.filter_jit(update, donate='warn')
        """,
        {},
        None,
    ),
    (
        "crlf-newlines-kept",
        "import jax\r\n\r\n\r\n@jax.jit\r\ndef step(x, y):\r\n    return x + y, x - y\r\n",
        [(4, 0, "x")],
        "from functools import partial\r\n\r\nimport jax\r\n\r\n\r\n"
        "@partial(jax.jit, donate_argnums=0)\r\ndef step(x, y):\r\n    return x + y, x - y\r\n",
        {},
        "step(x, y)",
    ),
    (
        "bom-kept",
        "\ufeffimport jax\n\n\nstep = jax.jit(lambda x, y: (x + y, x - y))\n",
        [(4, 0, "x")],
        "\ufeffimport jax\n\n\nstep = jax.jit(lambda x, y: (x + y, x - y), donate_argnums=0)\n",
        {},
        "step(x, y)",
    ),
]


NOOP_CASES = [
    (
        "already-donated",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnames="x")
        """,
        [(8, 0, "x")],
        None,
    ),
    (
        "spec-from-a-variable",
        """
        import jax

        DONATE = (0,)


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=DONATE)
        """,
        [(10, 1, "y")],
        "`donate_argnums` is spelled `DONATE`",
    ),
    (
        "spec-not-a-constant",
        """
        import os

        import jax

        TRAINING = os.environ.get("MODE") == "train"


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=(0,) if TRAINING else ())
        """,
        [(12, 1, "y")],
        "not a constant",
    ),
    (
        "static-argument",
        """
        import jax


        def update(x, n):
            return x * n


        step = jax.jit(update, static_argnames="n")
        """,
        [(8, 1, "n")],
        "is static",
    ),
    (
        "options-through-kwargs",
        """
        import jax

        OPTIONS = {}


        def update(x, y):
            return x + y, x - y


        step = jax.jit(update, **OPTIONS)
        """,
        [(10, 0, "x")],
        "`**kwargs`",
    ),
    (
        "keyword-only-beside-argnums",
        """
        import jax


        def update(x, *, y):
            return x + y, x - y


        step = jax.jit(update, donate_argnums=0)
        """,
        [(8, None, "y")],
        "would switch off JAX's inference",
    ),
    (
        "positional-only-beside-argnames",
        """
        import jax


        def update(x, y, /):
            return x + y, x - y


        step = jax.jit(update, donate_argnames="x")
        """,
        [(8, 1, "y")],
        "would switch off JAX's inference",
    ),
    (
        "pmap-keyword-only",
        """
        import jax


        def update(x, *, y):
            return x + y, x - y


        step = jax.pmap(update)
        """,
        [(8, None, "y")],
        "donates by position only",
    ),
    (
        "equinox-subset-not-expressible",
        """
        import equinox as eqx


        @eqx.filter_jit
        def step(model, x, y):
            return x + y, x - y
        """,
        [(4, 1, "x")],
        "would also donate `y`",
    ),
    (
        "haliax-donate-args-not-written",
        """
        import haliax


        @haliax.named_jit
        def step(x, y):
            return x + y, x - y
        """,
        [(4, 0, "x")],
        "does not write",
    ),
    (
        "two-definitions-on-one-line",
        """
        import jax


        def update(x, y):
            return x + y, x - y


        a, b = jax.jit(update), jax.jit(update)
        """,
        [(8, 0, "x")],
        "no jitted definition",
    ),
    (
        "no-definition-at-line",
        """
        import jax

        x = 1
        """,
        [(3, 0, "x")],
        "no jitted definition on this line",
    ),
    (
        "index-out-of-range",
        """
        import jax


        def update(x):
            return x


        step = jax.jit(update)
        """,
        [(8, 3, None)],
        "out of range",
    ),
    (
        "no-fixes",
        """
        import jax


        @jax.jit
        def step(x):
            return x
        """,
        [],
        None,
    ),
]

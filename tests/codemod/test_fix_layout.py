"""The added keyword follows the call's own layout (pyupgrade-style before/after tables).

One-per-line calls get a new line at the arguments' indentation, with the
trailing-comma style kept; calls on one line stay on one line; a last
argument spanning lines and a closing bracket on its own line are handled,
whatever the nesting.  Every case is fixed twice: the second run is a no-op.
"""

from __future__ import annotations

import pytest

from jaxmem.codemod import add_donations
from jaxmem.findings import DonationFix

HEAD = "import functools\nimport jax\n\n\ndef update(x, y, n=1):\n    return x\n\n\ndef main(a, b):\n"
LINE = HEAD.count("\n") + 1  # the jit call's first line

LAYOUTS = [
    pytest.param(
        "    step = jax.jit(update, static_argnums=2)\n",
        "    step = jax.jit(update, static_argnums=2, donate_argnums=0)\n",
        id="one-line",
    ),
    pytest.param(
        "    step = jax.jit(\n        update,\n        static_argnums=2,\n    )\n",
        "    step = jax.jit(\n        update,\n        static_argnums=2,\n        donate_argnums=0,\n    )\n",
        id="one-per-line-trailing-comma",
    ),
    pytest.param(
        "    step = jax.jit(\n        update,\n        static_argnums=2\n    )\n",
        "    step = jax.jit(\n        update,\n        static_argnums=2,\n        donate_argnums=0\n    )\n",
        id="one-per-line-no-trailing-comma",
    ),
    pytest.param(
        "    step = jax.jit(\n        update,\n        static_argnums=2,  # why\n    )\n",
        "    step = jax.jit(\n        update,\n        static_argnums=2,  # why\n        donate_argnums=0,\n    )\n",
        id="comment-stays-on-its-argument",
    ),
    pytest.param(
        "    step = jax.jit(update,\n                   static_argnums=2)\n",
        "    step = jax.jit(update,\n                   static_argnums=2,\n                   donate_argnums=0)\n",
        id="aligned-with-the-bracket",
    ),
    pytest.param(
        "    step = jax.jit(\n        update\n    )\n",
        "    step = jax.jit(\n        update,\n        donate_argnums=0\n    )\n",
        id="lone-argument-on-its-own-line",
    ),
    pytest.param(
        "    p_step = jax.pmap(\n        functools.partial(\n            update, n=2),\n        axis_name='batch')\n",
        "    p_step = jax.pmap(\n        functools.partial(\n            update, n=2),\n        axis_name='batch',\n"
        "        donate_argnums=0)\n",
        id="first-argument-spans-lines",
    ),
    pytest.param(
        "    step = jax.jit(\n        update,\n        in_shardings=(\n            a, b))\n",
        "    step = jax.jit(\n        update,\n        in_shardings=(\n            a, b),\n        donate_argnums=0)\n",
        id="last-argument-spans-lines-one-per-line",
    ),
    pytest.param(
        "    step = jax.jit(update, in_shardings=(\n        a, b))\n",
        "    step = jax.jit(update, in_shardings=(\n        a, b), donate_argnums=0)\n",
        id="last-argument-spans-lines-shared-line",
    ),
    pytest.param(
        "    step = jax.jit(update,\n                   in_shardings=(a,\n                                 b))\n",
        "    step = jax.jit(update,\n                   in_shardings=(a,\n                                 b),\n"
        "                   donate_argnums=0)\n",
        id="last-argument-spans-lines-aligned",
    ),
    pytest.param(
        "    step = jax.jit(update, in_shardings=(\n        a, b),\n    )\n",
        "    step = jax.jit(update, in_shardings=(\n        a, b), donate_argnums=0,\n    )\n",
        id="last-argument-spans-lines-bracket-on-its-own-line",
    ),
    pytest.param(
        "    step = jax.jit(\n        update, static_argnums=2\n    )\n",
        "    step = jax.jit(\n        update, static_argnums=2, donate_argnums=0\n    )\n",
        id="arguments-share-a-line-bracket-on-its-own",
    ),
    pytest.param(
        "    step = jax.jit(\n        update, static_argnums=2,\n    )\n",
        "    step = jax.jit(\n        update, static_argnums=2, donate_argnums=0,\n    )\n",
        id="arguments-share-a-line-trailing-comma",
    ),
    pytest.param(
        "    step = jax.jit(functools.partial(\n        update, n=2))\n",
        "    step = jax.jit(functools.partial(\n        update, n=2), donate_argnums=0)\n",
        id="lone-argument-spans-lines",
    ),
    pytest.param(
        "    step = jax.jit(\n        functools.partial(\n            update, n=2),\n    )\n",
        "    step = jax.jit(\n        functools.partial(\n            update, n=2),\n        donate_argnums=0,\n    )\n",
        id="lone-argument-spans-lines-bracket-on-its-own",
    ),
]


@pytest.mark.parametrize(("before", "after"), LAYOUTS)
def test_added_keyword_follows_the_layout(before, after):
    fixes = [DonationFix(LINE, 0, "x")]
    result = add_donations(HEAD + before, fixes)
    assert result.error is None and result.skipped == []
    assert result.source == HEAD + after
    compile(result.source, "fixed.py", "exec")
    assert add_donations(result.source, fixes).source == result.source  # the fixed point


DECORATORS = [
    pytest.param(
        "@functools.partial(\n    jax.jit,\n    static_argnums=2,\n)\n",
        "@functools.partial(\n    jax.jit,\n    static_argnums=2,\n    donate_argnums=0,\n)\n",
        id="partial-one-per-line",
    ),
    pytest.param(
        "@functools.partial(jax.jit, in_shardings=(\n    None, None))\n",
        "@functools.partial(jax.jit, in_shardings=(\n    None, None), donate_argnums=0)\n",
        id="partial-last-argument-spans-lines",
    ),
    pytest.param(
        "@functools.partial(\n    jax.jit, static_argnums=2\n)\n",
        "@functools.partial(\n    jax.jit, static_argnums=2, donate_argnums=0\n)\n",
        id="partial-bracket-on-its-own-line",
    ),
]


@pytest.mark.parametrize(("before", "after"), DECORATORS)
def test_decorator_keyword_follows_the_layout(before, after):
    source = "import functools\nimport jax\n\n\n" + before + "def step(x, y, n):\n    return x + y\n"
    fixes = [DonationFix(5, 0, "x")]
    result = add_donations(source, fixes)
    assert result.error is None and result.skipped == []
    assert result.source == source.replace(before, after)
    assert add_donations(result.source, fixes).source == result.source

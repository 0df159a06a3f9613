"""The fixer's splicing gives exactly what transforming the whole tree gives.

jaxmem-fix writes edits by splicing new code into the original text (linear
in the file's size); transforming the whole libcst tree is the reference.
"""

from __future__ import annotations

import pytest

from jaxmem.codemod import edits
from jaxmem.codemod.edits import add_donations
from jaxmem.codemod.splice import CannotSplice
from jaxmem.findings import DonationFix

CASES = {
    # The edited definition right after the imports is rebuilt with the import block.
    "header, docstring, class, no final newline": (
        '#!/usr/bin/env python\n# header\n"""doc"""\nimport jax\n@jax.jit\ndef f(x):\n    return x\n\n\n'
        "class A:\n    # c\n    @jax.jit\n    def g(self, y):\n        return y",
        [DonationFix(5, 0, "x"), DonationFix(12, 1, "y")],
    ),
    "CRLF newlines": (
        "import jax\r\n\r\n@jax.jit\r\ndef f(x):\r\n    return x\r\n\r\nstep = jax.jit(f)\r\n",
        [DonationFix(3, 0, "x"), DonationFix(7, 0, "x")],
    ),
    "no import needed, comments kept": (
        "import jax\nfrom functools import partial\n\nx = 1\n\n@jax.jit\ndef f(x):\n    return x\n"
        "step = jax.jit(f)  # trailing\n",
        [DonationFix(6, 0, "x"), DonationFix(9, 0, "x")],
    ),
    "BOM and a factory": (
        "\ufeffimport jax\n\n\ndef make():\n    def inner(s, b):\n        return s + b\n"
        "    return jax.jit(inner)\n\n\nstep = make()\n",
        [DonationFix(7, 0, "s")],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_splicing_equals_transforming_the_whole_tree(name, monkeypatch):
    source, fixes = CASES[name]
    spliced = add_donations(source, fixes)
    assert spliced.error is None and spliced.changed

    def cannot_splice(*args, **kwargs):
        raise CannotSplice("forced, to get the reference")

    monkeypatch.setattr(edits, "splice", cannot_splice)
    reference = add_donations(source, fixes)
    assert spliced.source == reference.source
    assert [e.describe() for e in spliced.edits] == [e.describe() for e in reference.edits]

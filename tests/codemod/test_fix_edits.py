"""add_donations: each definition form, before and after as exact text.

"fix" cases must turn ``before`` into exactly ``after``; "noop" cases must
leave the source byte for byte and say why.  Every fix case with a ``call``
is also executed under real JAX (CPU) in test_fix_execution.py.
"""

from __future__ import annotations

import pytest
from fix_cases import FIX_CASES, NOOP_CASES, code, fixes_of, source_of

from jaxmem.codemod import add_donations


def _import_lines(text: str) -> int:
    """Lines of ``functools`` imports, and the blank line opening a new section after one."""
    lines = text.splitlines()
    return sum(line.startswith(("from functools", "import functools"))
               + (line.startswith(("from functools", "import functools")) and i + 1 < len(lines)
                  and not lines[i + 1].strip() and i + 2 < len(lines) and lines[i + 2].startswith(("import", "from")))
               for i, line in enumerate(lines))


@pytest.mark.parametrize(
    ("before", "fixes", "after", "options"),
    [pytest.param(b, f, a, o, id=i) for i, b, f, a, o, _ in FIX_CASES],
)
def test_fix(before, fixes, after, options):
    result = add_donations(source_of(before), fixes_of(*fixes), **options)
    assert result.error is None
    assert result.skipped == []
    assert result.source == source_of(after)
    assert len(result.edits) == 1
    # Idempotent: the fixed definition already donates everything (an added
    # import line, and the blank line of a new import section, move it down).
    shift = _import_lines(result.source) - _import_lines(source_of(before))
    moved = [(line + shift, *rest) for line, *rest in fixes]
    again = add_donations(result.source, fixes_of(*moved), **options)
    assert again.source == result.source and not again.edits and not again.skipped


@pytest.mark.parametrize(
    ("before", "fixes", "reason"),
    [pytest.param(b, f, r, id=i) for i, b, f, r in NOOP_CASES],
)
def test_noop(before, fixes, reason):
    source = code(before)
    result = add_donations(source, fixes_of(*fixes))
    assert result.source == source
    assert not result.changed and result.edits == [] and result.error is None
    if reason is None:
        assert result.skipped == []
    else:
        assert result.skipped and all(reason in skip.reason for skip in result.skipped), result.skipped


def test_unparsable_source_is_returned_untouched_with_an_error():
    source = "import jax\n\n@jax.jit\ndef step(x:\n    return x\n"
    result = add_donations(source, fixes_of((3, 0, "x")))
    assert result.source == source
    assert result.error is not None and "cannot parse" in result.error and "untouched" in result.error


def test_edit_lines_say_what_changed_and_why_not():
    source = code(
        """
        import jax


        def update(x, y, n):
            return x * n + y


        step = jax.jit(update, static_argnums=2)
        """
    )
    result = add_donations(source, fixes_of((8, 0, "x"), (8, 2, "n")))
    assert result.lines("train.py") == [
        "train.py:8: step: donate `x` (donate_argnums=0)",
        "train.py:8: step: not donating `n`: parameter `n` is static; a static argument cannot be donated",
    ]


def test_only_the_definition_and_one_import_line_change():
    source = code(
        '''
        """Training loop."""
        # -*- a comment that must survive -*-
        import jax
        import jax.numpy as jnp   # aligned   comment


        CONFIG = {'lr' : 0.1,   "steps":3}


        @jax.jit
        def step(x, y):
            return x + y, x - y


        def loop(x, y):
            for _ in range(CONFIG["steps"]):
                x, y = step(x, y)
            return x
        '''
    )
    result = add_donations(source, fixes_of((10, 0, "x"), (10, 1, "y")))
    before, after = source.splitlines(), result.source.splitlines()
    # The import opens a standard-library section above the others, as isort puts it.
    assert after[:1] == before[:1]
    assert after[1:3] == ["from functools import partial", ""]
    assert after[3:] == [
        "@partial(jax.jit, donate_argnums=(0, 1))" if line == "@jax.jit" else line for line in before[1:]
    ]


def test_latin1_text_round_trips():
    source = "# -*- coding: latin-1 -*-\nimport jax\n\n# café\nstep = jax.jit(lambda x: x)\n"
    result = add_donations(source, fixes_of((5, 0, "x")))
    assert result.source == source.replace("lambda x: x)", "lambda x: x, donate_argnums=0)")
    assert result.source.encode("latin-1")


def test_unknown_style_is_an_error():
    with pytest.raises(ValueError, match="style must be one of"):
        add_donations("x = 1\n", fixes_of((1, 0, "x")), style="both")

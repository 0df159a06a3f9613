"""Values that hold the state's very arrays without looking like it: the
default ``jaxmem-fix`` must not donate the state while they are read later.

jax hands back the array it was given whenever a call changes nothing
(checked on jax 0.10.2): a slice that takes everything, a reshape or
``astype`` that keeps the shape and dtype, ``jnp.concatenate([x])``,
``lax.stop_gradient``, a dtype cast, ``x.at[:].get()``, a loop primitive
whose body passes the carry through.  Python's containers do the same
(``d.get``, ``d.copy()``, ``list(d.values())``, comprehensions, ``d | {}``),
and so does a name bound to a name bound to the state.  Each form below
really crashes when its step donates the state (the program is run with
every step donated), and runs as written after the default fix.  The
forms that make new arrays (a reduction, arithmetic, ``.at[0].set``) are
still donated, and their old state is really deleted.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

# name -> the lines that bind ``j`` from the state ``s`` before the step
ALIASES = {
    "full-slice": 'j = s["a"][:]',
    "ellipsis": 'j = s["a"][...]',
    "reshape-same-shape": 'j = s["a"].reshape(3)',
    "astype-same-dtype": 'j = s["a"].astype(jnp.float32)',
    "jnp-reshape": 'j = jnp.reshape(s["a"], (3,))',
    "stop-gradient": 'j = jax.lax.stop_gradient(s["a"])',
    "concatenate-one": 'j = jnp.concatenate([s["a"]])',
    "dtype-cast": 'j = jnp.float32(s["a"])',
    "at-get": 'j = s["a"].at[:].get()',
    "dict-get": 'j = s.get("a")',
    "dict-copy": "j = s.copy()",
    "values-list": "j = list(s.values())",
    "comprehension": "j = [v for v in s.values()]",
    "dict-comprehension": "j = {k: v for k, v in s.items()}",
    "sorted-items": "j = sorted(s.items())[0][1]",
    "next-iter": "j = next(iter(s.values()))",
    "dict-merge": "j = s | {}",
    "tuple-concat": 'j = (s["a"],) + (s["b"],)',
    "fori-loop-no-trip": "j = jax.lax.fori_loop(0, 0, lambda i, c: c, s)",
    "scan-carry-through": "j = jax.lax.scan(lambda c, x: (c, x), s, None, length=2)[0]",
    "alias-of-alias": "a = s\nj = a",
    "loop-variable": "j = None\nfor v in s.values():\n    j = v",
    "unknown-method": "j = Box(s).get()",
}
# name -> the lines that bind ``j`` to new arrays: the state is still donated
NEW_ARRAYS = {
    "reduction": 'j = s["a"].sum()',
    "arithmetic": 'j = s["a"] * 1',
    "tree-map-arithmetic": "j = jax.tree_util.tree_map(lambda v: v + 0, s)",
    "dict-comprehension-arithmetic": "j = {k: v * 2 for k, v in s.items()}",
    "indexed-update": 'j = s["a"].at[0].set(5.0)',
    "jnp-copy": 'j = jnp.copy(s["a"])',
}

HEAD = """\
import functools

import jax
import jax.numpy as jnp


class Box:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


def total(tree):
    return round(sum(float(jnp.sum(leaf)) for leaf in jax.tree_util.tree_leaves(tree)), 4)

"""

FORM = """

@jax.jit  # the step
def step_{i}(s):
    return jax.tree_util.tree_map(lambda v: v * 2, s)


def form_{i}():
    s = {{"a": jnp.arange(3.0) * 1, "b": jnp.ones(3) * 2}}
    first = s
{binding}
    s = step_{i}(s)
    return total(j), total(s), first["a"].is_deleted()
"""

MAIN = """

for name, form in FORMS:
    try:
        print(name, *form())
    except RuntimeError as error:
        print(name, "crash", "deleted" in str(error))
"""

DONATING = "@functools.partial(jax.jit, donate_argnums=0)  # the step\n"


def _program() -> str:
    forms = list(ALIASES.items()) + list(NEW_ARRAYS.items())
    text = HEAD
    for i, (_, binding) in enumerate(forms):
        text += FORM.format(i=i, binding=textwrap.indent(binding, "    "))
    text += "\n\nFORMS = [" + ", ".join(f"({name!r}, form_{i})" for i, (name, _) in enumerate(forms)) + "]\n"
    return text + MAIN


def _run(program: Path) -> dict[str, str]:
    done = subprocess.run([sys.executable, program.name], cwd=program.parent, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


def test_aliases_of_the_state_are_never_donated_and_new_arrays_still_are(tmp_path):
    program = tmp_path / "train.py"
    source = _program()
    program.write_text(source)
    original = _run(program)
    assert len(original) == len(ALIASES) + len(NEW_ARRAYS)
    assert all(line.endswith("False") for line in original.values())  # nothing donated as written

    program.write_text(source.replace("@jax.jit  # the step\n", DONATING))
    forced = _run(program)
    crashed = {name for name, line in forced.items() if line == "crash True"}
    assert crashed == set(ALIASES), "each alias form crashes when its state is donated"

    program.write_text(source)
    fix = Path(sys.executable).parent / "jaxmem-fix"
    done = subprocess.run([str(fix), "--no-cache", "train.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr  # the new-array forms were changed
    fixed = _run(program)
    for name in ALIASES:
        assert fixed[name] == original[name], (name, program.read_text())
    for name in NEW_ARRAYS:
        assert fixed[name] == original[name].replace("False", "True"), (name, fixed[name])

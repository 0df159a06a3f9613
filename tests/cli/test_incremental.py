"""A warm run after one file changed reports exactly what a cold run reports,
also when the change decides findings in another file (cross-file call sites)."""

from __future__ import annotations

import textwrap

from .conftest import write

STEP = textwrap.dedent("""\
    import jax


    @jax.jit
    def step(state, batch):
        return state + batch
    """)

LOOP = textwrap.dedent("""\
    import jax.numpy as jnp

    from pkg.model import step


    def train(batches):
        state = jnp.zeros(3)
        for batch in batches:
            state = step(state, batch)
        return state
    """)

# The same loop, reading the old state after the call: donating it would crash.
LOOP_READS_AFTER = LOOP.replace("        state = step(state, batch)\n",
                                "        new = step(state, batch)\n        print(state)\n        state = new\n")
assert LOOP_READS_AFTER != LOOP


def test_one_changed_file_warm_equals_cold_across_files(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/model.py", STEP)
    write(tmp_path, "pkg/train.py", LOOP)
    for n in range(5):  # files the change does not touch, served from the cache
        write(tmp_path, f"pkg/other{n}.py", STEP.replace("step", f"step{n}"))

    def both_runs() -> str:
        warm = jaxmem("check", "--format", "json", ".")
        cold = jaxmem("check", "--no-cache", "--format", "json", ".")
        assert warm.stdout == cold.stdout, (warm.stdout, cold.stdout)
        return warm.stdout

    first = both_runs()
    assert '"code": "JXM001"' in first and '"path": "pkg/model.py"' in first
    write(tmp_path, "pkg/train.py", LOOP_READS_AFTER)  # changes pkg/model.py's finding
    second = both_runs()
    assert second != first
    assert '"path": "pkg/model.py"' not in second
    write(tmp_path, "pkg/train.py", LOOP)  # and back, the entry for the first text reused
    assert both_runs() == first

"""equinox: the advice is a ``donate=`` mode that ``eqx.filter_jit`` accepts, and jaxmem-fix writes it.

equinox 0.13.8 has no per-argument donation (``filter_jit(donate_argnums=...)``
raises ValueError): ``donate="all"`` donates every argument,
``"all-except-first"`` all but the first.  A mode is proposed only when every
parameter it covers may be donated; otherwise the finding says which one
must survive, and carries no fix.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("equinox")

PROGRAM = textwrap.dedent(
    """
    import equinox as eqx
    import jax
    import jax.numpy as jnp


    @eqx.filter_jit
    def step(params, opt, batch):
        return jax.tree_util.tree_map(lambda p: p - 0.1 * batch, params), opt + 1


    def main():
        params = {"w": jnp.ones(3), "b": jnp.zeros(3)}
        opt = jnp.zeros(3)
        first = (params["w"], params["b"], opt)  # .is_deleted() stays readable after donation
        for _ in range(3):
            batch = jnp.ones(3)
            params, opt = step(params, opt, batch)
        print("sum", float(params["w"].sum()), float(opt.sum()))
        print("old leaves deleted:", first[0].is_deleted() and first[1].is_deleted() and first[2].is_deleted())


    main()
    """
)

# ``batch`` is read again by the next iteration: no mode is safe ("all-except-first"
# still donates it), so the finding says so and has no fix.
BATCH_KEPT = PROGRAM.replace("def main():\n", "def main():\n    batch = jnp.ones(3)\n").replace(
    "        batch = jnp.ones(3)\n", "")

# The value to keep travels as the first argument: "all-except-first" is safe.
FIRST_KEPT = textwrap.dedent(
    """
    import equinox as eqx
    import jax.numpy as jnp


    @eqx.filter_jit
    def step(batch, params):
        return params - 0.1 * batch


    def main():
        batch = jnp.ones(3)
        params = jnp.ones(3)
        first = params
        for _ in range(3):
            params = step(batch, params)
        print("batch kept:", not batch.is_deleted(), "old params deleted:", first.is_deleted())


    main()
    """
)


def _run(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})


def _tool(name: str, *args, cwd: Path) -> subprocess.CompletedProcess:
    """``jaxmem-fix ARGS`` or ``jaxmem check ARGS``, without the cache, in ``cwd``."""
    command = [str(Path(sys.executable).parent / name), *args[:1], "--no-cache", *args[1:]]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    return tmp_path


def test_equinox_advice_is_a_mode_the_fixer_applies_and_the_program_donates(project):
    program = project / "train.py"
    program.write_text(PROGRAM)
    original = _run(program)
    assert original.returncode == 0, original.stderr
    assert "old leaves deleted: False" in original.stdout
    check = _tool("jaxmem", "check", "--format", "json", ".", cwd=project)
    findings = json.loads(check.stdout)["findings"]
    assert {f["parameter"]["name"] for f in findings} == {"params", "opt"}
    for finding in findings:
        assert 'eqx.filter_jit(donate="all")' in finding["message"] and "donate_argnums" not in finding["message"]
        assert finding["fix"] and finding["confidence"] == "high"
    done = _tool("jaxmem-fix", "--quiet", ".", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert '@eqx.filter_jit(donate="all")' in program.read_text()
    fixed = _run(program)
    assert fixed.returncode == 0, fixed.stderr
    assert "old leaves deleted: True" in fixed.stdout
    assert fixed.stdout.splitlines()[0] == original.stdout.splitlines()[0]  # same numbers
    assert _tool("jaxmem-fix", "--quiet", ".", cwd=project).returncode == 0  # the fixed point


def test_no_safe_mode_is_said_and_not_fixed(project):
    program = project / "train.py"
    program.write_text(BATCH_KEPT)
    check = _tool("jaxmem", "check", "--format", "json", ".", cwd=project)
    findings = json.loads(check.stdout)["findings"]
    assert findings and all(not f["fix"] and f["confidence"] == "medium" for f in findings)
    assert all("`batch` must not be donated" in f["message"] for f in findings)
    done = _tool("jaxmem-fix", "--unsafe-fixes", ".", cwd=project)
    assert done.returncode == 0 and program.read_text() == BATCH_KEPT
    assert "no automatic fix" in done.stdout
    # The message is right: "all-except-first" would delete the batch the next iteration reads.
    program.write_text(BATCH_KEPT.replace("@eqx.filter_jit\n", '@eqx.filter_jit(donate="all-except-first")\n'))
    crashed = _run(program)
    assert crashed.returncode != 0 and "deleted" in crashed.stderr


def test_value_kept_first_gets_all_except_first(project):
    program = project / "train.py"
    program.write_text(FIRST_KEPT)
    done = _tool("jaxmem-fix", "--quiet", ".", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert '@eqx.filter_jit(donate="all-except-first")' in program.read_text()
    fixed = _run(program)
    assert fixed.returncode == 0, fixed.stderr
    assert "batch kept: True old params deleted: True" in fixed.stdout

"""The bundled example does what the README says: jaxmem finds its missed
donation and its use-after-donation, and the bug really crashes under JAX."""

import os
import subprocess
import sys
from pathlib import Path

from jaxmem.api import check_paths
from jaxmem.findings import Confidence
from jaxmem.settings import Settings

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train.py"


def test_check_finds_the_missed_donation_and_the_crash():
    (report,) = check_paths([str(EXAMPLE)], Settings(), use_cache=False)
    found = {(f.code, f.parameter_name) for f in report.findings}
    assert ("JXM001", "opt_state") in found and ("JXM001", "params") in found
    assert ("JXM101", "ema_params") in found
    confidences = {f.parameter_name: f.confidence for f in report.findings if f.code == "JXM001"}
    assert confidences["params"] is Confidence.HIGH
    # adam_init puts one zeros tree under "mu" and "nu": donating opt_state
    # fails with "Attempt to donate the same buffer twice", so not high.
    assert confidences["opt_state"] is Confidence.MEDIUM
    (opt_state,) = [f for f in report.findings if f.parameter_name == "opt_state"]
    assert any("returns `zeros` in two places" in e.message for e in opt_state.evidence)


_PROBE = """
import runpy, sys
program = runpy.run_path(sys.argv[1])
jax = program["jax"]
params = program["init_params"](jax.random.PRNGKey(0))
opt_state = program["adam_init"](params)
batch = next(program["make_batches"](jax.random.PRNGKey(1), 1))
program["train_step"](params, opt_state, batch)
print("params deleted:", all(leaf.is_deleted() for leaf in jax.tree_util.tree_leaves(params)))
program["main"](steps=12)
print("ran to the end")
"""


def _fixed_example(tmp_path, *flags):
    fixed = tmp_path / "train.py"
    text = EXAMPLE.read_text(encoding="utf-8")
    # Remove the use-after-donation that JXM101 reports (the ema loss read).
    text = text.replace("  ema loss {float(evaluate(ema_params, eval_batch)):.4f}", "")
    fixed.write_text(text, encoding="utf-8")
    fix = Path(sys.executable).parent / "jaxmem-fix"
    done = subprocess.run([str(fix), *flags, str(fixed)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr  # changed the file
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE, encoding="utf-8")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, str(probe), str(fixed)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)


def test_the_default_fix_runs_to_the_end_with_params_donated(tmp_path):
    run = _fixed_example(tmp_path)
    assert run.returncode == 0, run.stderr
    assert "params deleted: True" in run.stdout and "ran to the end" in run.stdout


def test_the_medium_confidence_fix_would_crash_the_example(tmp_path):
    run = _fixed_example(tmp_path, "--unsafe-fixes")
    assert run.returncode != 0
    assert "donate the same buffer twice" in run.stderr


def test_the_example_really_crashes_where_jaxmem_says(tmp_path):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode != 0
    assert "Array has been deleted" in done.stderr
    (report,) = check_paths([str(EXAMPLE)], Settings(), use_cache=False)
    (jxm101,) = [f for f in report.findings if f.code == "JXM101"]
    assert f'line {jxm101.span.line}' in done.stderr.replace('", line ', "line ").replace("line  ", "line ")


def test_readme_quick_start_output_is_what_jaxmem_prints():
    root = EXAMPLE.parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split("finds the two bugs", 1)[1].split("```", 2)[1]
    documented = [line for line in block.splitlines() if line.startswith("examples/")]
    jaxmem = Path(sys.executable).parent / "jaxmem"
    done = subprocess.run([str(jaxmem), "check", "--no-cache", "examples/"], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == documented

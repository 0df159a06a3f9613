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
    assert confidences["opt_state"] is Confidence.HIGH


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

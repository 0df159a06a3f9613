"""benchmarks/gpu_verify.py runs end to end with --small on CPU."""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_small_run_writes_results(tmp_path):
    out = tmp_path / "result.json"
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "gpu_verify.py"), "--small",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["all_leaves_reused"] is True
    assert result["prediction_equals_donated_state"] is True
    assert result["predicted_saving_bytes"] == result["donated_state_bytes"] > 0
    assert result["platform"] == "cpu" and result["measured_saving_bytes"] is None

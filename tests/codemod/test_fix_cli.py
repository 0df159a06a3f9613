"""``jaxmem-fix`` end to end through its real command line (subprocess).

Covers in-place edits, ``--diff``/``--check`` exit codes, idempotence,
stdin, encodings (BOM, latin-1), CRLF, permissions, unparsable files,
``--unsafe-fixes``, ``--style``, the project's jax lower bound and
``--verified`` with a report written by the real ``jaxmem verify``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
from training_programs import TRAIN

TRAIN_FIXED = TRAIN.replace(
    "import jax\n", "from functools import partial\n\nimport jax\n", 1
).replace("@jax.jit\n", "@partial(jax.jit, donate_argnums=0)\n")

# ``state`` comes from the caller: medium confidence.
CALLER_OWNED = textwrap.dedent(
    """\
    import jax


    def update(state, grad):
        return state - 0.1 * grad


    step = jax.jit(update)


    def train(state, grads):
        for grad in grads:
            state = step(state, grad)
        return state
    """
)


def fix(*args, cwd, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run ``jaxmem-fix ARGS`` in ``cwd``."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "jaxmem.codemod.cli", "--no-cache", *args],
        cwd=cwd, input=stdin, capture_output=True, env=env, timeout=120,
    )


@pytest.fixture
def project(tmp_path):
    """An empty project folder (its own pyproject.toml stops the config search)."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    return tmp_path


def test_fixes_in_place_then_changes_nothing(project):
    (project / "train.py").write_text(TRAIN)
    first = fix("train.py", cwd=project)
    assert first.returncode == 1, first.stderr
    assert (project / "train.py").read_text() == TRAIN_FIXED
    assert "train.py:5: update: donate `state` (@partial(jax.jit, donate_argnums=0))" in first.stdout.decode()

    second = fix("train.py", cwd=project)
    assert second.returncode == 0, second.stderr
    assert (project / "train.py").read_text() == TRAIN_FIXED
    assert second.stdout == b""


def test_diff_prints_a_unified_diff_and_writes_nothing(project):
    (project / "train.py").write_text(TRAIN)
    result = fix("--diff", "train.py", cwd=project)
    assert result.returncode == 1
    diff = result.stdout.decode()
    assert diff.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "-@jax.jit\n+@partial(jax.jit, donate_argnums=0)\n" in diff
    assert "+from functools import partial\n" in diff
    assert (project / "train.py").read_text() == TRAIN


def test_check_exit_codes(project):
    (project / "train.py").write_text(TRAIN)
    assert fix("--check", "train.py", cwd=project).returncode == 1
    assert (project / "train.py").read_text() == TRAIN
    (project / "train.py").write_text(TRAIN_FIXED)
    assert fix("--check", "train.py", cwd=project).returncode == 0


def test_folder_without_findings_exits_zero(project):
    (project / "clean.py").write_text("import jax\n\nx = jax.numpy.ones(3)\n")
    result = fix(".", cwd=project)
    assert result.returncode == 0 and result.stdout == b""


def test_stdin_writes_the_fixed_text_to_stdout(project):
    result = fix("-", "--stdin-filename", "train.py", cwd=project, stdin=TRAIN.encode())
    assert result.returncode == 1
    assert result.stdout.decode() == TRAIN_FIXED
    assert "donate `state`" in result.stderr.decode()


def test_stdin_without_findings_passes_the_text_through(project):
    source = b"x = 1\n"
    result = fix("-", cwd=project, stdin=source)
    assert result.returncode == 0 and result.stdout == source


def test_crlf_newlines_are_kept(project):
    data = TRAIN.replace("\n", "\r\n").encode()
    (project / "train.py").write_bytes(data)
    assert fix("train.py", cwd=project).returncode == 1
    assert (project / "train.py").read_bytes() == TRAIN_FIXED.replace("\n", "\r\n").encode()


def test_bom_is_kept(project):
    (project / "train.py").write_bytes(b"\xef\xbb\xbf" + TRAIN.encode())
    assert fix("train.py", cwd=project).returncode == 1
    assert (project / "train.py").read_bytes() == b"\xef\xbb\xbf" + TRAIN_FIXED.encode()


def test_latin1_file_stays_latin1(project):
    header = "# -*- coding: latin-1 -*-\n# Schrittweite für den Optimierer\n"
    (project / "train.py").write_bytes((header + TRAIN).encode("latin-1"))
    assert fix("train.py", cwd=project).returncode == 1
    data = (project / "train.py").read_bytes()
    assert data == (header + TRAIN_FIXED).encode("latin-1")
    assert b"f\xfcr" in data


def test_permissions_are_kept(project):
    path = project / "train.py"
    path.write_text(TRAIN)
    os.chmod(path, 0o751)
    assert fix("train.py", cwd=project).returncode == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert path.read_text() == TRAIN_FIXED
    assert sorted(p.name for p in project.iterdir()) == ["pyproject.toml", "train.py"]  # no temp file left


def test_unparsable_file_is_left_alone_and_others_are_fixed(project):
    broken = "import jax\n\n@jax.jit\ndef update(state:\n    return state\n"
    (project / "broken.py").write_text(broken)
    (project / "train.py").write_text(TRAIN)
    result = fix(".", cwd=project)
    # Exit 1 as for any change: the file is reported on stderr, the others fixed.
    assert result.returncode == 1
    assert (project / "broken.py").read_text() == broken
    assert (project / "train.py").read_text() == TRAIN_FIXED
    assert "broken.py:4:11: error: could not parse" in result.stderr.decode()


def test_an_unparsable_file_alone_exits_1_not_2(project):
    broken = "import jax\n\n@jax.jit\ndef update(state:\n    return state\n"
    (project / "broken.py").write_text(broken)
    result = fix("broken.py", cwd=project)
    assert result.returncode == 1
    assert "broken.py:4:11: error: could not parse" in result.stderr.decode()
    assert (project / "broken.py").read_text() == broken


def test_medium_confidence_needs_unsafe_fixes(project):
    (project / "train.py").write_text(CALLER_OWNED)
    safe = fix("train.py", cwd=project)
    assert safe.returncode == 0
    assert (project / "train.py").read_text() == CALLER_OWNED
    assert "apply with --unsafe-fixes" in safe.stdout.decode()
    assert "1 more below high confidence" in safe.stdout.decode()
    assert "`jaxmem confirm --out confirm.json -- pytest`" in safe.stdout.decode()

    unsafe = fix("--unsafe-fixes", "train.py", cwd=project)
    assert unsafe.returncode == 1
    assert (project / "train.py").read_text() == CALLER_OWNED.replace(
        "jax.jit(update)", "jax.jit(update, donate_argnums=0)"
    )


def test_style_argnames(project):
    (project / "train.py").write_text(CALLER_OWNED)
    assert fix("--unsafe-fixes", "--style", "argnames", "train.py", cwd=project).returncode == 1
    assert 'jax.jit(update, donate_argnames="state")' in (project / "train.py").read_text()


def test_project_requiring_new_jax_gets_the_decorator_factory(project):
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["jax[cuda12]>=0.9.0"]\n')
    (project / "train.py").write_text(TRAIN)
    assert fix("train.py", cwd=project).returncode == 1
    assert (project / "train.py").read_text() == TRAIN.replace("@jax.jit\n", "@jax.jit(donate_argnums=0)\n")


def test_config_jax_version_wins_over_requirements(project):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\ndependencies = ["jax>=0.9.0"]\n\n[tool.jaxmem]\njax-version = "0.4.30"\n'
    )
    (project / "train.py").write_text(TRAIN)
    assert fix("train.py", cwd=project).returncode == 1
    assert (project / "train.py").read_text() == TRAIN_FIXED


def test_bad_config_is_an_error(project):
    (project / "pyproject.toml").write_text('[tool.jaxmem]\ndonation-style = "both"\n')
    (project / "train.py").write_text(TRAIN)
    result = fix("train.py", cwd=project)
    assert result.returncode == 2
    assert "donation-style" in result.stderr.decode()
    assert (project / "train.py").read_text() == TRAIN


def test_missing_path_is_an_error(project):
    result = fix("nope.py", cwd=project)
    assert result.returncode == 2
    assert "nope.py" in result.stderr.decode()


def test_bad_verified_report_is_an_error(project):
    (project / "report.json").write_text('{"reports": []}')
    (project / "train.py").write_text(TRAIN)
    result = fix("--verified", "report.json", "train.py", cwd=project)
    assert result.returncode == 2
    assert "not a jaxmem verify report" in result.stderr.decode()


WRAPPED_TRAIN = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    def update(state, grad):
        return state - 0.1 * grad


    step = jax.jit(update)


    def train(steps):
        state = jnp.ones((4,))
        for _ in range(steps):
            grad = jnp.ones((4,))
            state = step(state, grad)
        return state


    if __name__ == "__main__":
        train(3)
    """
)


def jaxmem(*args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "jaxmem.cli", *args], cwd=cwd, capture_output=True,
                          env=env, timeout=300)


def test_verified_applies_only_what_the_verifier_confirmed(project):
    pytest.importorskip("jax")
    (project / "train.py").write_text(WRAPPED_TRAIN)
    recorded = jaxmem("record", "--out", "record.json", "--", "python", "train.py", cwd=project)
    assert recorded.returncode == 0, recorded.stderr.decode()
    jaxmem("verify", "--record", "record.json", "--format", "json", "--output", "report.json", cwd=project)
    report = json.loads((project / "report.json").read_text())
    assert any(leaf["parameter"] == "state" and leaf["aliased"] for r in report["reports"] for leaf in r["leaves"])

    # The same report with the state leaf not reused: nothing is applied.
    for entry in report["reports"]:
        for leaf in entry["leaves"]:
            leaf["aliased"] = False
    (project / "refuted.json").write_text(json.dumps(report))
    refuted = fix("--verified", "refuted.json", "train.py", cwd=project)
    assert refuted.returncode == 0
    assert "no output that reuses" in refuted.stdout.decode()
    assert (project / "train.py").read_text() == WRAPPED_TRAIN

    confirmed = fix("--verified", "report.json", "train.py", cwd=project)
    assert confirmed.returncode == 1, confirmed.stderr.decode()
    assert "step = jax.jit(update, donate_argnums=0)\n" in (project / "train.py").read_text()


def test_works_without_jax(project):
    (project / "train.py").write_text(TRAIN)
    blocked = (
        "import sys\n"
        "sys.modules['jax'] = sys.modules['jaxlib'] = None  # importing them now raises ImportError\n"
        "from jaxmem.codemod.cli import main\n"
        "sys.exit(main(['--no-cache', 'train.py']))\n"
    )
    result = subprocess.run([sys.executable, "-c", blocked], cwd=project, capture_output=True, timeout=120)
    assert result.returncode == 1, result.stderr.decode()
    assert (project / "train.py").read_text() == TRAIN_FIXED

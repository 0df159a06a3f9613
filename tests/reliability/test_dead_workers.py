"""Item 2: a file whose worker process dies is retried, or reported as JXM900 naming the cause.

Fault injection: a fresh Python (no JAX threads, so forking is safe) wraps
the engine so that analysing ``victim.py`` in a worker process kills that
worker with SIGKILL, what the out-of-memory killer sends, then runs the
real ``jaxmem check --jobs 2``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from .conftest import MISSED_DONATION, MISSED_DONATION_LINE, write

DRIVER = textwrap.dedent("""\
    import multiprocessing, os, signal, sys
    from jaxmem.cli import main
    from jaxmem.lint import engine

    multiprocessing.set_start_method("fork")
    real, parent, marker = engine.facts_for_file, os.getpid(), sys.argv[1]

    def facts_for_file(path, *args, **kwargs):
        if os.getpid() != parent and path.endswith("victim.py"):
            if marker == "always" or not os.path.exists(marker):
                if marker != "always":
                    open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        return real(path, *args, **kwargs)

    engine.facts_for_file = facts_for_file
    sys.exit(main(["check", "--no-cache", "--jobs", "2", "code"]))
    """)


def _check_with_faults(project, marker: str) -> subprocess.CompletedProcess:
    for number in range(6):
        write(project, f"code/train_{number}.py", MISSED_DONATION)
    write(project, "code/victim.py", MISSED_DONATION)
    return subprocess.run([sys.executable, "-c", DRIVER, marker], cwd=project,
                          capture_output=True, text=True, timeout=600)


def _expected_finding(name: str) -> str:
    return f"code/{name}:{MISSED_DONATION_LINE}:1: JXM001 `step` does not donate `state`"


def test_a_worker_killed_once_is_retried_and_nothing_is_lost(project):
    marker = project / "killed-once"
    result = _check_with_faults(project, str(marker))
    assert marker.exists()  # the fault really happened
    assert result.returncode == 1, result.stderr
    for name in [f"train_{n}.py" for n in range(6)] + ["victim.py"]:
        assert _expected_finding(name) in result.stdout
    assert "JXM900" not in result.stdout


def test_a_file_that_always_kills_its_worker_is_a_jxm900_naming_the_cause(project):
    result = _check_with_faults(project, "always")
    [death] = [line for line in result.stdout.splitlines() if line.startswith("code/victim.py")]
    assert death.startswith("code/victim.py:1:1: JXM900 not analysed: the worker process")
    assert "killed by SIGKILL (out of memory?)" in death and "--jobs 1" in death
    for number in range(6):
        assert _expected_finding(f"train_{number}.py") in result.stdout
    assert result.returncode == 1


@pytest.mark.parametrize("jobs", ["-3", "two"])
def test_a_negative_or_non_numeric_jobs_is_a_usage_error(jaxmem, jobs):
    result = jaxmem("check", "--jobs", jobs, ".")
    assert result.returncode == 2
    assert "is not a number of workers" in result.stderr

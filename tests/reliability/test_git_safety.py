"""Item 8: discovering files never runs a command the checked repository configured."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from .conftest import MISSED_DONATION, write

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_core_fsmonitor_of_the_checked_repository_is_not_run(project, jaxmem):
    marker = project / "FSMONITOR-RAN"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "config", "core.fsmonitor", f"touch {marker}; false"],
                   check=True)
    write(project, "train.py", MISSED_DONATION)
    write(project, "ignored/skip.py", MISSED_DONATION)
    (project / ".gitignore").write_text("ignored/\n")
    subprocess.run(["git", "-c", "core.fsmonitor=", "-C", str(project), "add", "train.py"], check=True)
    result = jaxmem("check", "--no-cache", ".")
    assert not marker.exists()
    # git still decides what is ignored.
    assert "train.py" in result.stdout and "skip.py" not in result.stdout

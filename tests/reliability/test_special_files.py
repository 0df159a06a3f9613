"""Item 6: only regular files are read, and only up to max-file-size bytes.

A FIFO named ``x.py`` used to hang check, fix and the folder walk; a link
named ``zero.py`` to ``/dev/zero`` was read until memory ran out.
"""

from __future__ import annotations

import os

import pytest

from .conftest import MISSED_DONATION, MISSED_DONATION_LINE, TRAIN, TRAIN_FIXED, write


@pytest.fixture
def hostile(project):
    """A project whose folder holds a FIFO and a /dev/zero link named like Python files."""
    os.mkfifo(project / "pipe.py")
    os.symlink("/dev/zero", project / "zero.py")
    return project


def test_check_reports_special_files_and_checks_the_rest(hostile, jaxmem):
    write(hostile, "train.py", MISSED_DONATION)
    result = jaxmem("check", "--no-cache", ".")
    lines = result.stdout.splitlines()
    assert "pipe.py:1:1: JXM900 not a regular file (a FIFO); jaxmem reads only regular files" in lines
    assert "zero.py:1:1: JXM900 not a regular file (a character device); jaxmem reads only regular files" in lines
    assert any(line.startswith(f"train.py:{MISSED_DONATION_LINE}:1: JXM001") for line in lines)
    assert result.returncode == 1


def test_special_files_named_explicitly_are_reported_too(hostile, jaxmem):
    result = jaxmem("check", "--no-cache", "pipe.py", "zero.py")
    assert result.stdout.count("JXM900 not a regular file") == 2


def test_fix_leaves_special_files_alone_and_fixes_the_rest(hostile, jaxmem_fix):
    write(hostile, "train.py", TRAIN)
    result = jaxmem_fix("--no-cache", ".")
    assert (hostile / "train.py").read_text() == TRAIN_FIXED
    assert "pipe.py:1:1: error: not a regular file (a FIFO)" in result.stderr
    assert result.returncode == 1


def test_special_config_and_requirement_files_are_not_read(project, jaxmem, jaxmem_fix):
    (project / "pyproject.toml").unlink()
    os.mkfifo(project / "pyproject.toml")
    os.symlink("/dev/zero", project / "requirements.txt")
    write(project, "train.py", TRAIN)
    assert "train.py" in jaxmem("check", "--no-cache", "train.py").stdout
    assert jaxmem_fix("--no-cache", "train.py").returncode == 1
    assert (project / "train.py").read_text() == TRAIN_FIXED


def test_a_file_over_max_file_size_is_reported_with_the_setting_to_change(project, jaxmem):
    (project / "pyproject.toml").write_text("[tool.jaxmem]\nmax-file-size = 1000\n")
    write(project, "big.py", MISSED_DONATION + "# padding\n" * 200)
    write(project, "train.py", MISSED_DONATION)
    result = jaxmem("check", "--no-cache", ".")
    assert "big.py:1:1: JXM900 file is larger than max-file-size (" in result.stdout
    assert "raise max-file-size in [tool.jaxmem]" in result.stdout
    assert f"train.py:{MISSED_DONATION_LINE}:1: JXM001" in result.stdout


@pytest.mark.parametrize("value", ["0", "-5", '"10MB"', "true"])
def test_a_bad_max_file_size_is_a_config_error(project, jaxmem, value):
    (project / "pyproject.toml").write_text(f"[tool.jaxmem]\nmax-file-size = {value}\n")
    result = jaxmem("check", ".")
    assert result.returncode == 2
    assert "max-file-size" in result.stderr and "positive number of bytes" in result.stderr

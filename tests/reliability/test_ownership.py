"""Item 9: jaxmem-fix keeps the owner, group, mode and hard links of what it edits,
and leaves read-only files alone (these tests run as root, as CI does)."""

from __future__ import annotations

import grp
import os
import pwd
import stat

import pytest

from jaxmem.codemod import cli as fix_cli

from .conftest import TRAIN, TRAIN_FIXED, write

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")


def _nobody():
    user = pwd.getpwnam("nobody")
    try:
        group = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        group = user.pw_gid
    return user.pw_uid, group


@as_root
def test_owner_group_and_mode_are_kept(project, jaxmem_fix):
    path = write(project, "train.py", TRAIN)
    uid, gid = _nobody()
    os.chown(path, uid, gid)
    os.chmod(path, 0o640)
    result = jaxmem_fix("--no-cache", "train.py")
    assert result.returncode == 1, result.stderr
    assert path.read_text() == TRAIN_FIXED
    info = os.stat(path)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (uid, gid, 0o640)


def test_hard_links_are_kept(project, jaxmem_fix):
    path = write(project, "train.py", TRAIN)
    os.link(path, project / "linked_copy.txt")
    result = jaxmem_fix("--no-cache", "train.py")
    assert result.returncode == 1, result.stderr
    assert path.read_text() == TRAIN_FIXED
    assert (project / "linked_copy.txt").read_text() == TRAIN_FIXED
    assert os.stat(path).st_nlink == 2


def test_a_read_only_file_is_refused_with_a_message(project, jaxmem_fix):
    path = write(project, "train.py", TRAIN)
    os.chmod(path, 0o444)
    result = jaxmem_fix("--no-cache", "train.py")
    assert path.read_text() == TRAIN
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert "train.py: read-only (mode 0444); left untouched" in result.stderr
    assert "added" not in result.stdout
    assert result.returncode == 1


def test_a_failed_write_is_reported_and_not_counted_as_a_fix(project, monkeypatch, capsys):
    # Fault injection: root writes into read-only folders, so make the
    # replacing rename fail the way it fails there for other users.
    path = write(project, "train.py", TRAIN)

    def read_only_folder(source, target):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", read_only_folder)
    monkeypatch.chdir(project)
    status = fix_cli.main(["--no-cache", "train.py"])
    out, err = capsys.readouterr()
    assert path.read_text() == TRAIN
    assert "train.py: cannot write the fixed file: Permission denied; left untouched" in err
    assert "added" not in out and "donate" not in out
    assert sorted(p.name for p in project.iterdir()) == ["pyproject.toml", "train.py"]  # no temp file left
    assert status == 1

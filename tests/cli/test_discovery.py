"""Expanding command-line paths into the files to check."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from jaxmem.discovery import DiscoveryError, discover

from .conftest import write

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def make_tree(root):
    for relative in [
        "pkg/__init__.py", "pkg/model.py", "pkg/stubs.pyi", "pkg/notes.txt",
        "pkg/sub/train.py",
        ".git/hooks/pre-commit.py", ".hg/x.py", "__pycache__/m.py", "build/lib/m.py",
        "dist/m.py", ".tox/py311/m.py", ".nox/m.py", "node_modules/m.py", ".eggs/m.py",
        "demo.egg-info/m.py", "env/lib/site.py", ".jaxmem_cache/m.py",
    ]:
        write(root, relative, "x = 1\n")
    write(root, "env/pyvenv.cfg", "home = /usr/bin\n")


def test_folders_recurse_to_python_files_in_sorted_order(tmp_path):
    make_tree(tmp_path)
    found = discover([tmp_path], root=tmp_path)
    relative = [os.path.relpath(p, tmp_path) for p in found]
    assert relative == ["pkg/__init__.py", "pkg/model.py", "pkg/stubs.pyi", "pkg/sub/train.py"]


def test_relative_paths_keep_their_spelling(tmp_path, monkeypatch):
    make_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert discover(["."], root=tmp_path) == [
        "pkg/__init__.py", "pkg/model.py", "pkg/stubs.pyi", "pkg/sub/train.py",
    ]
    assert discover(["pkg/sub"], root=tmp_path) == ["pkg/sub/train.py"]


def test_duplicates_are_dropped(tmp_path, monkeypatch):
    make_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert discover(["pkg/sub", "pkg/sub/train.py", "./pkg/sub/train.py"], root=tmp_path) == [
        "pkg/sub/train.py",
    ]


def test_a_missing_path_is_an_error_naming_it(tmp_path):
    with pytest.raises(DiscoveryError, match=r"nowhere\.py: no such file or directory"):
        discover([tmp_path / "nowhere.py"], root=tmp_path)


def test_explicit_files_are_checked_whatever_their_name(tmp_path, monkeypatch):
    write(tmp_path, "scripts/run", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert discover(["scripts/run"], root=tmp_path) == ["scripts/run"]
    assert discover(["scripts"], root=tmp_path) == []


def test_exclude_by_name_and_by_path(tmp_path, monkeypatch):
    for relative in ["src/a.py", "src/a_pb2.py", "third_party/lib/b.py",
                     "tests/fixtures/c.py", "tests/test_d.py", "src/tests/fixtures/e.py"]:
        write(tmp_path, relative, "x = 1\n")
    monkeypatch.chdir(tmp_path)
    found = discover(["."], root=tmp_path,
                     exclude=("*_pb2.py", "third_party", "tests/fixtures"))
    assert found == ["src/a.py", "src/tests/fixtures/e.py", "tests/test_d.py"]


def test_excluded_explicit_files_are_checked_unless_force_exclude(tmp_path, monkeypatch):
    write(tmp_path, "gen/a_pb2.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert discover(["gen/a_pb2.py"], root=tmp_path, exclude=("*_pb2.py",)) == ["gen/a_pb2.py"]
    assert discover(["gen/a_pb2.py"], root=tmp_path, exclude=("*_pb2.py",),
                    force_exclude=True) == []
    assert discover(["gen"], root=tmp_path, exclude=("gen",), force_exclude=True) == []
    # a file in an excluded folder, as pre-commit passes it
    assert discover(["gen/a_pb2.py"], root=tmp_path, exclude=("gen",), force_exclude=True) == []
    assert discover(["gen/a_pb2.py"], root=tmp_path, exclude=("g*",), force_exclude=True) == []
    assert discover(["gen/a_pb2.py"], root=tmp_path, exclude=("other",), force_exclude=True) == ["gen/a_pb2.py"]


def test_stdin_is_passed_through(tmp_path):
    assert discover(["-"], root=tmp_path) == ["-"]


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@needs_git
def test_git_ignored_files_are_skipped_but_tracked_ones_kept(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    write(tmp_path, ".gitignore", "generated/\n*_gen.py\n")
    for relative in ["src/a.py", "src/b_gen.py", "generated/c.py", "src/forced_gen.py"]:
        write(tmp_path, relative, "x = 1\n")
    git(tmp_path, "add", "-f", "src/forced_gen.py")
    monkeypatch.chdir(tmp_path)
    assert discover(["."], root=tmp_path) == ["src/a.py", "src/forced_gen.py"]
    # named explicitly, an ignored file is still checked
    assert discover(["src/b_gen.py"], root=tmp_path) == ["src/b_gen.py"]


@needs_git
def test_gitignore_applies_when_checking_a_subfolder(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    write(tmp_path, ".gitignore", "*_gen.py\n")
    write(tmp_path, "src/a.py", "x = 1\n")
    write(tmp_path, "src/b_gen.py", "x = 1\n")
    monkeypatch.chdir(tmp_path / "src")
    assert discover(["."], root=tmp_path) == ["a.py"]


@needs_git
def test_a_named_folder_is_checked_even_when_git_ignores_it(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    write(tmp_path, ".gitignore", "vendored/\n")
    write(tmp_path, "vendored/pkg/a.py", "x = 1\n")
    monkeypatch.chdir(tmp_path / "vendored")
    assert discover(["."], root=tmp_path) == ["pkg/a.py"]
    monkeypatch.chdir(tmp_path)
    assert discover(["vendored"], root=tmp_path) == ["vendored/pkg/a.py"]
    assert discover(["."], root=tmp_path) == []  # below a named folder, ignores still apply


def test_gitignore_means_nothing_outside_a_work_tree(tmp_path, monkeypatch):
    write(tmp_path, ".gitignore", "*_gen.py\n")
    write(tmp_path, "a_gen.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert discover(["."], root=tmp_path) == ["a_gen.py"]


@needs_git
def test_without_git_on_path_nothing_is_filtered(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    write(tmp_path, ".gitignore", "*_gen.py\n")
    write(tmp_path, "a_gen.py", "x = 1\n")
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.chdir(tmp_path)
    assert discover(["."], root=tmp_path) == ["a_gen.py"]

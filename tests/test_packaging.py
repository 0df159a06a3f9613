"""The top-level folders install only as sub-packages of ``jaxmem``."""

import subprocess
import sys


def _python(code, cwd):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_folders_install_under_jaxmem_only(tmp_path):
    done = _python("import jaxmem.lint, jaxmem.codemod, jaxmem.runtime_check, jaxmem.lint.rules", tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("lint", "codemod", "runtime_check"):
        done = _python(f"import {name}", tmp_path)
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, name


def test_static_tool_does_not_import_jax(tmp_path):
    done = _python("import sys, jaxmem.cli, jaxmem.api, jaxmem.codemod.cli, jaxmem.lint.engine; "
                   "print('jax' in sys.modules)", tmp_path)
    assert done.stdout.strip() == "False", done.stderr


def test_every_package_folder_is_listed_for_the_wheel():
    """setuptools installs only the packages pyproject lists: a new stage folder must be named there."""
    import tomllib
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    setuptools = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    for top, package in (("jaxmem", "jaxmem"), ("lint", "jaxmem.lint"), ("codemod", "jaxmem.codemod"),
                         ("runtime_check", "jaxmem.runtime_check")):
        for init in (repo / top).rglob("__init__.py"):
            parts = init.parent.relative_to(repo / top).parts
            assert ".".join((package, *parts)) in listed, init

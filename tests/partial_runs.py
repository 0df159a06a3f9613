"""A partial run (``jaxmem check FILE``, as pre-commit runs it) must read the other
project files that may call a private helper of FILE, and see them change."""

import subprocess
import sys
import textwrap
from pathlib import Path


def _jaxmem(folder: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "jaxmem"), *args], cwd=folder,
                          capture_output=True, text=True, timeout=300)


def assert_partial_run_reads_the_other_file(folder: Path, name: str, text: str, naming: str, clean: str) -> None:
    """``name`` holding ``text`` is checked alone: medium while ``tools.py`` holds ``naming``
    (it names the private helper), high once it holds ``clean`` (the warm cache sees the edit)."""
    (folder / "pyproject.toml").write_text("")
    (folder / name).write_text(textwrap.dedent(text))
    (folder / "tools.py").write_text(naming)
    partial = _jaxmem(folder, "check", "--no-cache", name)
    assert "JXM001" in partial.stdout and "(medium confidence" in partial.stdout, partial.stdout + partial.stderr
    (folder / "tools.py").write_text(clean)
    again = _jaxmem(folder, "check", name)
    assert "(high confidence)" in again.stdout, again.stdout + again.stderr

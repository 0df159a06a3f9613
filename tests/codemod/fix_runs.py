"""Helpers of the fix-then-run tests of library contracts: a program written as
a one-file project, run with this interpreter, and fixed by ``jaxmem-fix``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run(*command, cwd) -> subprocess.CompletedProcess:
    """``command`` in ``cwd``, its output captured (10 minutes at most)."""
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def tool(name: str) -> str:
    """The path of a console script installed beside this interpreter (``jaxmem``, ``jaxmem-fix``)."""
    return os.path.join(os.path.dirname(sys.executable), name)


def fix(folder: Path, program: str, *options, name: str = "train.py") -> tuple[Path, subprocess.CompletedProcess]:
    """Write ``program`` as ``name`` in a project at ``folder`` and run ``jaxmem-fix OPTIONS name`` on it."""
    (folder / "pyproject.toml").write_text("")
    path = folder / name
    path.write_text(program)
    return path, run(tool("jaxmem-fix"), *options, name, cwd=folder)


def last_line(result: subprocess.CompletedProcess) -> str:
    """The last line a successful run printed."""
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def load(path: Path) -> dict:
    """The names the fixed program at ``path`` defines, run as an imported module (not ``__main__``)."""
    namespace = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def fix_and_rerun(folder: Path, program: str, name: str = "train.py") -> Path:
    """Run ``program``, fix it with the default ``jaxmem-fix`` (which must change it), run
    the fixed file and check it prints the same; the fixed file's path."""
    expected = run(sys.executable, "-c", program, cwd=folder)
    assert expected.returncode == 0, expected.stderr
    path, result = fix(folder, program, name=name)
    assert result.returncode == 1, result.stdout + result.stderr  # changed
    after = run(sys.executable, name, cwd=folder)
    assert after.returncode == 0 and after.stdout == expected.stdout, after.stderr
    return path


def left_alone_then_crashes(folder: Path, script: str, defining: Path, undonated: str, donated: str) -> None:
    """The default ``jaxmem-fix .`` of the project at ``folder`` changes nothing and ``defining``
    still holds ``undonated``; with ``donated`` in its place (what a high fix would have written),
    ``python script`` fails on a deleted buffer: the pattern is real."""
    result = run(tool("jaxmem-fix"), ".", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    text = defining.read_text()
    assert undonated in text
    defining.write_text(text.replace(undonated, donated))
    crashed = run(sys.executable, script, cwd=folder)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr


def crashes_when_forced(folder: Path, program: str, undonated: str, donated: str, error: str = "deleted") -> None:
    """``program`` runs, and with ``undonated`` replaced by ``donated`` (the donation a
    high-confidence fix would have written) it fails with ``error``: the pattern the
    analysis refused is real."""
    assert run(sys.executable, "-c", program, cwd=folder).returncode == 0
    assert undonated in program
    crash = run(sys.executable, "-c", program.replace(undonated, donated), cwd=folder)
    assert crash.returncode != 0 and error in crash.stderr, crash.stderr


def as_notebook(program: str) -> str:
    """``program`` as a notebook's JSON, one code cell per top-level block (split at two blank lines)."""
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": block.strip("\n").splitlines(keepends=True)}
             for block in program.split("\n\n\n") if block.strip()]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def notebook_code(path: Path) -> str:
    """The code cells of the notebook at ``path``, as one script."""
    cells = json.loads(path.read_text())["cells"]
    return "\n\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code") + "\n"


def report_of(program: str, name: str = "train.py"):
    """jaxmem's report on ``program`` as a one-file project, at every confidence."""
    from jaxmem.findings import Confidence
    from jaxmem.lint.engine import facts_for_file, project_hints, report
    from jaxmem.settings import Settings

    every = Settings(min_confidence=Confidence.LOW)
    (result,) = report([facts_for_file(name, program, every, project_hints({name: program}))], every)
    return result


def nnx_recording_runner(classes: dict[str, str]) -> str:
    """A script that wraps the ``__init__`` of each nnx class (``{"model": "Linear"}``) to record
    the arrays its first instance was made with, imports ``train`` (which runs the training, unseen
    by the analysis) and prints for each key whether all those arrays are now deleted."""
    records = "".join(f"record(nnx.{cls}, {key!r})\n" for key, cls in classes.items())
    return f"""\
import jax
from flax import nnx

made = {{}}


def record(cls, key):
    original = cls.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.setdefault(key, jax.tree_util.tree_leaves(nnx.state(self)))

    cls.__init__ = init


{records}import train  # noqa: E402,F401  (runs the training)

for key in {tuple(classes)!r}:
    print(key, "made with arrays now deleted:", all(leaf.is_deleted() for leaf in made[key]))
"""


def findings_of(folder: Path, function: str, *paths: str) -> dict[str, tuple[str, str]]:
    """``{parameter: (confidence, message)}`` of JXM001 on ``function``: ``jaxmem check PATHS``
    (default ``.``) of the project at ``folder``, as JSON."""
    done = run(tool("jaxmem"), "check", "--no-cache", "--format", "json", *(paths or (".",)), cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    return {f["parameter"]["name"]: (f["confidence"], f["message"]) for f in json.loads(done.stdout)["findings"]
            if f["code"] == "JXM001" and f["function"] == function}


def step_confidences(program: str, function: str) -> dict[str, str]:
    """``{parameter: confidence}`` of the JXM001 findings on ``function`` in ``program``."""
    return {f.parameter_name: f.confidence.value for f in report_of(program).findings
            if f.code == "JXM001" and f.function == function}


def run_strict(folder: Path, name: str) -> subprocess.CompletedProcess:
    """``python -W error name`` in ``folder`` on the CPU backend (an unusable donation fails)."""
    return subprocess.run([sys.executable, "-W", "error", name], cwd=folder, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})


def fix_and_rerun_recorded(folder: Path, program: str, classes: dict[str, str], donated: str) -> None:
    """``program`` as ``train.py``, run under :func:`nnx_recording_runner` of ``classes``; the
    default ``jaxmem-fix`` writes ``donated`` into it; the fixed program prints the same, and
    the arrays each recorded object was made with are now deleted (they were not before)."""
    (folder / "pyproject.toml").write_text("")
    (folder / "train.py").write_text(program)
    rerun_recorded_after_fix(folder, classes, "train.py", folder / "train.py", donated)


def rerun_recorded_after_fix(folder: Path, classes: dict[str, str], target: str, defining: Path, *donated: str) -> None:
    """Run the project at ``folder`` (its ``train.py`` imported) under :func:`nnx_recording_runner`
    of ``classes``; the default ``jaxmem-fix target`` writes each of ``donated`` into
    ``defining``; the fixed project prints the same, and the arrays each recorded object was
    made with are now deleted (they were not before)."""
    (folder / "runner.py").write_text(nnx_recording_runner(classes))
    original = run_strict(folder, "runner.py")
    assert original.returncode == 0, original.stderr
    assert original.stdout.count("now deleted: False") == len(classes), original.stdout
    done = run(tool("jaxmem-fix"), "--no-cache", target, cwd=folder)
    assert done.returncode == 1, done.stdout + done.stderr
    fixed_source = defining.read_text()
    assert all(spec in fixed_source for spec in donated), fixed_source
    fixed = run_strict(folder, "runner.py")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == original.stdout.replace("now deleted: False", "now deleted: True")

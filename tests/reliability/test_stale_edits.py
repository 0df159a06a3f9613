"""Item 1: jaxmem-fix edits a file only while it holds the bytes that were analysed.

Two jitted definitions sit on adjacent lines: ``keep`` (its argument is
read after the call, so it must never donate) right above ``update`` (safe
to donate).  Any line inserted above them moves ``keep`` onto the line the
analysis named for ``update``; an edit by that stale line number donates
``keep``'s argument, which then crashes with "Array has been deleted".
"""

from __future__ import annotations

import subprocess
import sys

from jaxmem import api
from jaxmem.codemod import cli as fix_cli

from .conftest import TRAIN, write

ADJACENT = TRAIN.replace(
    "\n\n@jax.jit\n", "\nkeep = jax.jit(lambda state: state * 2)\n@jax.jit\n"
).replace("        state = update(state, grad)\n    return state\n",
          "        state = update(state, grad)\n    doubled = keep(state)\n    return doubled + state\n")
assert "keep = jax.jit" in ADJACENT and "doubled = keep(state)" in ADJACENT
ADJACENT_FIXED = ADJACENT.replace(
    "import jax\n", "from functools import partial\n\nimport jax\n", 1
).replace("@jax.jit\n", "@partial(jax.jit, donate_argnums=0)\n")


def test_a_line_inserted_during_the_run_makes_the_file_refused_not_misedited(project, monkeypatch, capsys):
    path = write(project, "train.py", ADJACENT)
    edited = "# a line an editor inserted after the analysis\n" + ADJACENT
    real_check_paths = api.check_paths

    def check_paths_then_edit(*args, **kwargs):
        reports = real_check_paths(*args, **kwargs)
        path.write_text(edited)  # the fault: the file changes between analysis and edit
        return reports

    monkeypatch.setattr("jaxmem.api.check_paths", check_paths_then_edit)
    monkeypatch.chdir(project)
    status = fix_cli.main(["--no-cache", "train.py"])
    err = capsys.readouterr().err
    assert path.read_text() == edited  # untouched: neither `keep` nor `update` donated
    assert "train.py: changed since it was analysed" in err and "run jaxmem-fix again" in err
    assert status == 1


def test_concurrent_runs_leave_every_file_correctly_fixed(project):
    files = [write(project, f"pkg/train_{n:02}.py", ADJACENT) for n in range(30)]
    command = [sys.executable, "-m", "jaxmem.codemod.cli", "--no-cache", "pkg"]
    for _ in range(2):
        for path in files:
            path.write_text(ADJACENT)
        runs = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(2)]
        outputs = [run.communicate(timeout=600) for run in runs]
        assert all(b"Traceback" not in err for _, err in outputs)
        wrong = [p.name for p in files if p.read_text() != ADJACENT_FIXED]
        assert wrong == []
        assert all(run.returncode == 1 for run in runs)

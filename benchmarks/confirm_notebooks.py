"""Confirm-then-fix on real notebooks: ``jaxmem confirm -- NB.ipynb``, ``jaxmem-fix --verified``, run again.

What a notebook user does with the proposals the analysis cannot prove.
For each notebook of a pinned sdist that runs offline (no dataset to
download), in a fresh copy of the project:

1. ``jaxmem confirm --out R -- NB.ipynb``: the notebook's code cells run in
   order under the watch (this checkout's jaxmem and the .venv's jax/flax);
2. the proposals of that notebook, by static confidence and outcome, with
   each refutation's reason;
3. ``jaxmem-fix --verified R NB.ipynb``, then the fixed notebook's cells run
   again (:class:`jaxmem.runtime_check.notebook_run.NotebookRun`): a cell
   that now fails with a deleted or donated buffer is an unsafe fix.

    .venv/bin/python benchmarks/confirm_notebooks.py [--out results/confirm-notebooks-DATE.md]
    .venv/bin/python benchmarks/confirm_notebooks.py --package jax-md==0.2.29 --out X.md notebooks/a.ipynb ...

The default notebooks are flax 0.12.8's that run on a CPU without downloads.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _corpus import project_dir

HERE = Path(__file__).resolve().parent
VENV_BIN = HERE.parent / ".venv" / "bin"
NOTEBOOKS = ("flax", "0.12.8", [
    "docs_nnx/nnx_basics.ipynb", "docs_nnx/guides/optimization_cookbook.ipynb", "docs_nnx/guides/randomness.ipynb",
    "docs_nnx/guides/performance.ipynb", "docs/guides/flax_fundamentals/flax_basics.ipynb",
    "docs_nnx/guides/pytree.ipynb",
])
_RUN = """
import sys
from jaxmem.runtime_check.notebook_run import NotebookRun
try:
    NotebookRun(sys.argv[1]).run()
    print("RAN")
except Exception as error:
    print("FAILED", error, repr(error.__cause__)[:300])
"""


def confirm_notebook(root: Path, notebook: str, folder: Path, timeout: int) -> dict:
    """Confirm, fix and rerun ``notebook`` in the project copy ``root``; the figures."""
    report = folder / (Path(notebook).stem + ".json")
    started = time.monotonic()
    confirm = subprocess.run([str(VENV_BIN / "jaxmem"), "confirm", "--out", str(report), "--", notebook], cwd=root,
                             capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - started
    if not report.exists():
        return {"notebook": notebook, "error": f"confirm wrote no report (status {confirm.returncode})",
                "stderr": confirm.stderr[-500:]}
    document = json.loads(report.read_text())
    own = [p for p in document["proposals"] if p["definition_path"].endswith(notebook)]
    fixed = subprocess.run([str(VENV_BIN / "jaxmem-fix"), "--verified", str(report), notebook], cwd=root,
                           capture_output=True, text=True, timeout=timeout)
    rerun = subprocess.run([str(VENV_BIN / "python"), "-c", _RUN, notebook], cwd=root, capture_output=True, text=True,
                           timeout=timeout)
    verdict = next((line for line in rerun.stdout.splitlines() if line.startswith(("RAN", "FAILED"))),
                   f"no verdict (status {rerun.returncode})")
    return {"notebook": notebook, "exit_status": document["exit_status"], "runs": document["runs"],
            "seconds": round(seconds, 1), "proposals": own,
            "applied": sum(1 for line in fixed.stdout.splitlines() if ": donate `" in line),  # definitions
            "after_fix": verdict, "unsafe": verdict.startswith("FAILED") and any(
                marker in verdict for marker in ("deleted", "donated", "donate"))}


def render(package: str, results: list[dict]) -> str:
    """The Markdown report."""
    lines = [f"# Confirm-then-fix on notebooks, {datetime.date.today().isoformat()}", "",
             f"Command: `.venv/bin/python benchmarks/confirm_notebooks.py` ({package} sdist; this checkout's "
             "jaxmem, the .venv's jax and flax, CPU)", "",
             "| notebook | status | s | high: confirmed / refuted / not observed | medium: confirmed / refuted / "
             "not observed | definitions jaxmem-fix --verified changed | fixed notebook, run again |",
             "|---|---|---|---|---|---|---|"]
    for result in results:
        if "error" in result:
            lines.append(f"| {result['notebook']} | {result['error']} | | | | | |")
            continue
        lines.append(f"| {result['notebook']} | {result['exit_status']} ({result['runs']} run(s)) | "
                     f"{result['seconds']} | {_outcomes(result, 'high')} | {_outcomes(result, 'medium')} | "
                     f"{result['applied']} | "
                     f"{'UNSAFE: ' if result['unsafe'] else ''}{result['after_fix'][:60]} |")
    lines += ["", "Refutations, as jaxmem wrote them:", ""]
    for result in results:
        for proposal in result.get("proposals", []):
            for refutation in proposal["refutations"]:
                lines.append(f"- {result['notebook']} line {proposal['definition_line']} `{proposal['function']}` "
                             f"`{proposal['parameter_name']}` ({proposal['confidence']}): {refutation['kind']}: "
                             f"{refutation['message']}")
    return "\n".join(lines) + "\n"


def _outcomes(result: dict, confidence: str) -> str:
    """``confirmed / refuted / not observed`` counts of ``result``'s proposals at ``confidence``."""
    outcomes = [p["outcome"] for p in result["proposals"] if p["confidence"] == confidence]
    return " / ".join(str(outcomes.count(o)) for o in ("confirmed", "refuted", "not observed"))


def main(argv=None) -> int:
    """Run every notebook; print and write the report; 1 when a fix broke a notebook."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(HERE / "results" / f"confirm-notebooks-{datetime.date.today()}.md"))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per command (default: 900)")
    parser.add_argument("--package", metavar="NAME==VERSION", help="another sdist (default: flax==0.12.8)")
    parser.add_argument("notebooks", nargs="*", help="notebooks of that sdist (default: flax's offline ones)")
    args = parser.parse_args(argv)
    name, version, notebooks = NOTEBOOKS
    if args.package:
        name, _, version = args.package.partition("==")
    if args.notebooks or args.package:
        notebooks = args.notebooks
    source = project_dir(name, version, "sdist")
    results = []
    with tempfile.TemporaryDirectory(prefix="jaxmem-confirm-notebooks-") as folder:
        root = Path(folder) / "project"
        shutil.copytree(source, root)
        (root / "pyproject.toml").touch()  # the project's root, as a checkout's
        for notebook in notebooks:
            print(f"{notebook} ...", file=sys.stderr, flush=True)
            results.append(confirm_notebook(root, notebook, Path(folder), args.timeout))
    text = render(f"{name} {version}", results)
    print(text)
    Path(args.out).write_text(text)
    return 1 if any(result.get("unsafe") for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())

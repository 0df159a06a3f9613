"""Fix-then-run: tests and examples that ``jaxmem-fix`` changes, run under JAX on CPU before and after.

For each sdist of the corpus: the fixer (default, then ``--unsafe-fixes``)
runs on a copy of the whole project; every changed file that is a test
(``test_*.py``, ``*_test.py``) or an example (under a folder named
``example*``) and imports JAX is run in the original and in the fixed copy
(pytest for tests, ``python`` for scripts), with the copy first on
``PYTHONPATH`` so the project's own modules come from it.  A new failure
that mentions deleted or donated buffers is an unsafe fix.

Each project runs in its own venv under ``benchmarks/.cache/run-venvs/``
that sees ``.venv``'s packages (jax and jaxlib 0.10.2, pytest) through a
``.pth`` file and adds the project's declared dependencies, each constrained
to jax 0.10.2; a dependency that does not install beside it is left out and
recorded.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import email.parser
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

import _jaxmem_cli as jaxmem
from _corpus import CACHE, project_dir
from _scoring import DONATION_FAILURE, fix_verdict, run_outcome

VENVS = CACHE / "run-venvs"
_IMPORTS_JAX = re.compile(r"^\s*(import jax\b|from jax\b|import jax\.|from jax\.)", re.MULTILINE)
# Frameworks, data sets and tools a test of donations does not need, and that
# take minutes to install (TensorFlow, PyTorch, Atari) or replace jax.
_SKIPPED_REQUIREMENTS = {
    "jax", "jaxlib", "tensorflow", "tensorflow-cpu", "tf-nightly", "torch", "tpu-info", "tensorflow-text",
    "tensorflow-datasets", "tensorboard", "gymnasium", "opencv-python", "pytype", "mypy", "ale-py", "keras",
    "grain", "clu", "pytest-cov", "pytest-custom-exit-code", "tensorflow-probability", "tf-keras", "jax-cuda12-plugin",
}


def runnable_files(root: Path) -> list[str]:
    """Relative paths of the tests and examples under ``root`` that import JAX."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        name = path.name
        is_test = name.startswith("test_") or name.endswith("_test.py")
        is_example = any(part.lower().startswith("example") for part in relative.parts[:-1])
        if not (is_test or is_example):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if _IMPORTS_JAX.search(text):
            found.append(relative.as_posix())
    return found


def requirements(root: Path) -> tuple[list[str], list[str]]:
    """(unconditional, test-extra) ``Requires-Dist`` entries of the sdist's PKG-INFO, jax and heavy frameworks aside."""
    info = root / "PKG-INFO"
    if not info.exists():
        return [], []
    message = email.parser.Parser().parsestr(info.read_text(encoding="utf-8", errors="replace"))
    base, test = [], []
    for requirement in message.get_all("Requires-Dist") or []:
        marker = requirement.partition(";")[2].replace("'", '"').replace(" ", "")
        name = re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        if not name or name in _SKIPPED_REQUIREMENTS:
            continue
        if not marker:
            base.append(requirement.split(";")[0].strip())
        elif re.search(r'extra=="(test|tests|testing)"', marker):
            test.append(requirement.split(";")[0].strip())
    return base, test


def _see_this_interpreter(python: Path) -> None:
    """Let the run venv at ``python`` import this interpreter's packages (jax, pytest, jaxmem)."""
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "_jaxmem_accuracy_base.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def project_venv(label: str, root: Path, log) -> tuple[Path, dict]:
    """The venv for ``label`` (created once) and what it installed or left out.

    All declared and test dependencies in one pip call; if that fails, the
    declared ones alone; if that fails too, each declared one on its own.
    """
    folder = VENVS / label
    python = folder / "bin" / "python"
    record = folder / "installed.txt"
    if record.exists():
        _see_this_interpreter(python)  # the venv that made it may be gone (a removed worktree)
        return python, {"installed": record.read_text().split(), "left_out": (folder / "left_out.txt").read_text().split()}
    if folder.exists():
        shutil.rmtree(folder)
    venv.create(folder, with_pip=True)
    _see_this_interpreter(python)
    constraints = folder / "constraints.txt"
    constraints.write_text("jax==0.10.2\njaxlib==0.10.2\n")
    base, test = requirements(root)
    log(f"{label}: venv for fix-then-run, {len(base)} dependencies and {len(test)} for tests")
    if _pip(python, constraints, base + test):
        installed, left_out = base + test, []
    elif _pip(python, constraints, base):
        installed, left_out = base, test
    else:
        installed, left_out = [], list(test)
        for requirement in base:
            (installed if _pip(python, constraints, [requirement]) else left_out).append(requirement)
    (folder / "left_out.txt").write_text("\n".join(re.sub(r"\s", "", r) for r in left_out) + "\n")
    record.write_text("\n".join(re.sub(r"\s", "", r) for r in installed) + "\n")
    return python, {"installed": installed, "left_out": left_out}


def _require_test_extras() -> None:
    """Stop with a clear message when this interpreter lacks jax or pytest: every run venv
    sees its packages, and without them every run would fail the same way before and after
    (a worktree's venv made with ``pip install -e .`` instead of ``-e '.[test]'``)."""
    missing = [name for name in ("jax", "jaxlib", "pytest") if importlib.util.find_spec(name) is None]
    if missing:
        sys.exit(f"accuracy.py: fix-then-run needs {', '.join(missing)} in {sys.prefix} (the run venvs see its "
                 f"packages): install jaxmem's test extras there (pip install -e '.[test]') and run again")


def _pip(python: Path, constraints: Path, requirements: list[str]) -> bool:
    command = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(constraints),
               *requirements]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=300).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def changed_tests(before: str, after: str) -> list[str] | None:
    """Names of the ``test*`` functions holding the lines the fix changed; None when a change
    lies outside every test function (then the whole file runs)."""
    tree = ast.parse(before)
    spans = [(node.lineno, node.end_lineno, node.name) for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")]
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    names = []
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        lines = range(i1 + 1, max(i2, i1 + 1) + 1) if tag != "insert" else [i1 + 1]
        for line in lines:
            holders = [name for first, last, name in spans if first <= line <= last]
            if not holders:
                return None
            names.extend(holders)
    return sorted(set(names))


def run_file(python: Path, root: Path, relative: str, timeout: float, tests: list[str] | None = None, *,
             wrapper: list[str] = (), extra_path: list[str] = ()) -> tuple[str, str]:
    """(outcome, last lines of output) of running ``relative`` in ``root`` (only ``tests`` when given),
    under ``wrapper`` (e.g. ``jaxmem confirm --``) with ``extra_path`` after ``root`` on ``PYTHONPATH``."""
    is_test = relative.endswith("_test.py") or Path(relative).name.startswith("test_")
    # ``-p no:jaxmem``: the run venv sees jaxmem's entry points through .venv's .pth file but
    # cannot import an editable jaxmem, and the plugin is not what is measured here
    command = [str(python), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:jaxmem", relative] \
        if is_test else [str(python), relative]
    if is_test and tests:
        command += ["-k", " or ".join(tests)]
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(root), *extra_path]),
               PYTHONDONTWRITEBYTECODE="1", XLA_FLAGS="--xla_force_host_platform_device_count=1")
    try:
        done = subprocess.run([*wrapper, *command], cwd=root, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    output = done.stdout + done.stderr
    return run_outcome(done.returncode, output), _evidence(output)


def _evidence(output: str) -> str:
    lines = [line for line in output.splitlines() if DONATION_FAILURE.search(line)]
    tail = lines[-2:] if lines else output.strip().splitlines()[-2:]
    return " | ".join(line.strip()[:200] for line in tail)


def _copy(source: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".jaxmem_cache", "__pycache__"))
    return target


def sample_runs(changed: dict[str, dict[str, list[str]]], max_runs: int) -> list[tuple[str, str]]:
    """(package, file) pairs to run, at most ``max_runs`` (0: all): files the default fix changed first,
    then the others, taken round-robin over the packages so that no project uses up the budget."""
    ordered = []
    for mode in ("fix", "unsafe-fix"):
        queues = {label: [f for f in modes[mode] if (label, f) not in ordered] for label, modes in changed.items()}
        while any(queues.values()):
            for label, queue in queues.items():
                if queue:
                    ordered.append((label, queue.pop(0)))
    return ordered[:max_runs] if max_runs > 0 else ordered


def measure_fix_then_run(packages, *, max_runs: int, timeout: float, budget_s: float, log, work: Path) -> dict:
    """Section 4 over the sdists of ``packages``: at most ``max_runs`` changed files are run
    (``sample_runs``), and none is started after ``budget_s`` seconds."""
    _require_test_extras()
    started = time.perf_counter()
    changed, sources = {}, {}
    for name, version, kind in packages:
        if kind != "sdist":
            continue
        label = f"{name}-{version}"
        sources[label] = source = project_dir(name, version, kind)
        candidates = runnable_files(source)
        changed[label] = {}
        for mode, unsafe in (("fix", False), ("unsafe-fix", True)):
            copy = _copy(source, work / f"{label}-run-{mode}")
            jaxmem.fix(["."], copy, unsafe=unsafe)
            changed[label][mode] = [rel for rel in candidates if (copy / rel).read_bytes() != (source / rel).read_bytes()]
        log(f"{label}: the fixer changes {len(changed[label]['fix'])} tests/examples "
            f"({len(changed[label]['unsafe-fix'])} with --unsafe-fixes)")
    chosen = sample_runs(changed, max_runs)
    cases, ran, venvs = [], [], {}
    for label, relative in chosen:
        if budget_s > 0 and time.perf_counter() - started > budget_s:
            break
        if label not in venvs:
            python, venvs[label] = project_venv(label, sources[label], log)
            _copy(sources[label], work / f"{label}-run-before")
        python = VENVS / label / "bin" / "python"
        original = (sources[label] / relative).read_text(encoding="utf-8")
        # only the test functions the fixes touched (in either mode), so big test files fit the timeout
        selected = set()
        for mode in ("fix", "unsafe-fix"):
            if relative in changed[label][mode]:
                names = changed_tests(original, (work / f"{label}-run-{mode}" / relative).read_text(encoding="utf-8"))
                selected = None if names is None or selected is None else selected | set(names)
        tests = sorted(selected) if selected else None
        log(f"{label}: running {relative}{' -k ' + ' or '.join(tests) if tests else ''} before and after the fix")
        ran.append((label, relative))
        before, before_evidence = run_file(python, work / f"{label}-run-before", relative, timeout, tests)
        for mode in ("fix", "unsafe-fix"):
            if relative not in changed[label][mode]:
                continue
            after, evidence = run_file(python, work / f"{label}-run-{mode}", relative, timeout, tests)
            cases.append({"package": label, "path": relative, "tests": tests, "mode": mode, "before": before,
                          "after": after, "verdict": fix_verdict(before, after), "evidence": evidence,
                          "before_evidence": before_evidence})
    modes = ("fix", "unsafe-fix")

    def count(predicate) -> dict:
        return {m: len([c for c in cases if c["mode"] == m and predicate(c)]) for m in modes}

    summary = {
        "changed_files": {m: sum(len(c[m]) for c in changed.values()) for m in modes},
        "sampled": len(ran),
        "runs": count(lambda c: True),
        "same": count(lambda c: c["verdict"] == "same"),
        "same_and_passed": count(lambda c: c["verdict"] == "same" and c["after"] == "passed"),
        "unsafe": count(lambda c: c["verdict"] == "unsafe"),
        "broke": count(lambda c: c["verdict"] == "broke"),
    }
    sampled = [{"package": label, "changed": modes_changed, "run": [f for l, f in ran if l == label]}
               for label, modes_changed in changed.items()]
    return {"summary": summary, "cases": cases, "sampled": sampled, "venvs": venvs}

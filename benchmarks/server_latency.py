"""How long an editor waits for ``jaxmem server``, beside ``jaxmem check FILE``.

The project: ``examples/train.py`` at the root of a temporary tree that also
holds the installed flax, optax and equinox packages (copied from the
environment, so nothing is downloaded), under one ``pyproject.toml``.
Measured, each over ``--runs`` rounds (median, and the slowest):

* ``jaxmem check train.py`` from the root, with a cold cache (``.jaxmem_cache/``
  removed) and warm: what a user runs, process start included;
* the server: ``initialize`` answered; ``didOpen`` of ``train.py`` to its
  diagnostics with a cold cache, and of another file warm; a ``didChange``
  (a comment appended) to its diagnostics, which includes the 0.4 s pause
  the server waits for typing to stop; a ``codeAction`` on the JXM001.

The server's diagnostics must be ``jaxmem check``'s findings (codes, lines,
messages); the report says whether they are.

    TMPDIR=/tmp/tmp-me .venv/bin/python benchmarks/server_latency.py --runs 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata, util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "server"))
from lsp_client import BIN, LspClient  # noqa: E402  (the tests' client, real framing)

PACKAGES = ("flax", "optax", "equinox")
OTHER_FILE = "optax/_src/update.py"


def build_project(folder: Path) -> Path:
    """The benchmark tree under ``folder``; returns its root."""
    root = folder / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    shutil.copy(REPO / "examples" / "train.py", root / "train.py")
    for package in PACKAGES:
        source = Path(util.find_spec(package).origin).parent
        shutil.copytree(source, root / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return root


def check_findings(root: Path) -> tuple[float, list[tuple]]:
    """``jaxmem check train.py --format json`` from ``root``: wall seconds and the findings."""
    start = time.perf_counter()
    completed = subprocess.run([str(BIN / "jaxmem"), "check", "--format", "json", "train.py"], cwd=root,
                               capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - start
    if completed.returncode not in (0, 1):
        raise SystemExit(f"jaxmem check failed: {completed.stderr}")
    findings = json.loads(completed.stdout)["findings"]
    return elapsed, sorted((f["code"], f["line"], f["message"]) for f in findings)


def timed(action):
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def server_round(root: Path) -> dict:
    """One server session; seconds per step, and the diagnostics of ``train.py``."""
    shutil.rmtree(root / ".jaxmem_cache", ignore_errors=True)
    client = LspClient(root)
    try:
        seconds = {}
        seconds["initialize"], _ = timed(lambda: client.initialize(root))
        train = root / "train.py"
        text = train.read_text(encoding="utf-8")
        seconds["open, cold cache"], diagnostics = timed(lambda: client.diagnostics(client.open(train)))
        uri = train.as_uri()
        seconds["open another file, warm"], _ = timed(lambda: client.diagnostics(client.open(root / OTHER_FILE)))

        def change():
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                     "contentChanges": [{"text": text + "# edited\n"}]})
            return client.diagnostics(uri, version=2)

        seconds["change (0.4 s pause included)"], _ = timed(change)
        missed = [d for d in diagnostics if d["code"] == "JXM001"]
        seconds["code action"], actions = timed(lambda: client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": missed[0]["range"], "context": {"diagnostics": missed[:1]},
        })["result"])
        if not actions:
            raise SystemExit("no code action for the JXM001 of train.py")
        if client.close() != 0:
            raise SystemExit("jaxmem server did not exit 0")
        found = sorted((d["code"], d["range"]["start"]["line"] + 1, d["message"]) for d in diagnostics)
        return {"seconds": seconds, "findings": found}
    finally:
        client.kill()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds per measurement (default: 3)")
    parser.add_argument("--output", metavar="FILE", help="also write the numbers as JSON")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="jaxmem-server-bench-") as folder:
        root = build_project(Path(folder))
        files = sum(1 for _ in root.rglob("*.py"))
        lines = sum(len(p.read_bytes().splitlines()) for p in root.rglob("*.py"))
        rows: dict[str, list[float]] = {}
        expected = None
        for _ in range(args.runs):
            shutil.rmtree(root / ".jaxmem_cache", ignore_errors=True)
            cold, expected = check_findings(root)
            warm, _ = check_findings(root)
            rows.setdefault("jaxmem check train.py, cold cache", []).append(cold)
            rows.setdefault("jaxmem check train.py, warm", []).append(warm)
        same = True
        for _ in range(args.runs):
            outcome = server_round(root)
            same = same and outcome["findings"] == expected
            for name, value in outcome["seconds"].items():
                rows.setdefault(f"server: {name}", []).append(value)

    versions = {name: metadata.version(name) for name in ("jaxmem", "pygls", *PACKAGES)}
    print(f"project: train.py + {', '.join(f'{p} {versions[p]}' for p in PACKAGES)}: "
          f"{files} files, {lines:,} lines; {args.runs} run(s); pygls {versions['pygls']}")
    print("| step | median s | max s |\n|---|---|---|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):.2f} | {max(values):.2f} |")
    print(f"server diagnostics == jaxmem check findings: {same}")
    if args.output:
        Path(args.output).write_text(json.dumps({"versions": versions, "files": files, "lines": lines,
                                                 "seconds": rows, "same_findings": same}, indent=1) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

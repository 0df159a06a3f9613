"""jaxmem as a black box: ``jaxmem check --format json`` and ``jaxmem-fix`` run as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"


class JaxmemError(RuntimeError):
    """jaxmem exited 2 or printed no JSON document."""


@dataclass(frozen=True)
class Finding:
    """The fields of one finding the benchmark compares (``docs/json-schema.md``)."""

    code: str
    path: str
    line: int
    col: int
    message: str
    confidence: str
    definition_line: int | None
    parameter_index: int | None
    parameter_name: str | None
    evidence: tuple[str, ...] = ()  # the evidence messages, in order

    def identity(self) -> tuple:
        """What two runs must agree on: code, path, line, col, message, confidence."""
        return (self.code, self.path, self.line, self.col, self.message, self.confidence)


def _finding(raw: dict) -> Finding:
    definition = raw.get("definition") or {}
    parameter = raw.get("parameter") or {}
    return Finding(
        code=raw["code"], path=raw["path"], line=raw["line"], col=raw["col"], message=raw["message"],
        confidence=raw["confidence"], definition_line=definition.get("line"),
        parameter_index=parameter.get("index"), parameter_name=parameter.get("name"),
        evidence=tuple(e.get("message", "") for e in raw.get("evidence") or ()),
    )


def check(root: Path, *, no_cache: bool = True, shortcuts: bool = True, timeout: float = 900,
          skipped: list | None = None) -> list[Finding]:
    """Findings of ``jaxmem check --min-confidence low`` on the project folder ``root`` (run from it);
    the document's ``skipped`` entries (dicts) are added to ``skipped`` when given."""
    command = [str(BIN / "jaxmem"), "check", "--format", "json", "--min-confidence", "low", "--quiet"]
    if no_cache:
        command.append("--no-cache")
    command.append(".")
    env = dict(os.environ)
    env.pop("JAXMEM_NO_SHORTCUTS", None)
    if not shortcuts:
        env["JAXMEM_NO_SHORTCUTS"] = "1"
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    try:
        document = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise JaxmemError(f"jaxmem check in {root} exited {result.returncode} without JSON: "
                          f"{result.stderr.strip()[-800:]}") from None
    if result.returncode == 2:
        internal = [f for f in document["findings"] if "internal error" in f["message"]]
        if not internal:
            raise JaxmemError(f"jaxmem check in {root} exited 2: {result.stderr.strip()[-800:]}")
    if skipped is not None:
        skipped.extend(document.get("skipped") or ())
    return [_finding(raw) for raw in document["findings"]]


def fix(paths: list[str], cwd: Path, *, unsafe: bool = False, no_cache: bool = True,
        timeout: float = 900, verified: list[Path] = ()) -> subprocess.CompletedProcess:
    """Run ``jaxmem-fix [--unsafe-fixes] [--no-cache] [--verified R ...] PATHS`` from ``cwd`` (edits the files)."""
    command = [str(BIN / "jaxmem-fix"), "--quiet"] + (["--no-cache"] if no_cache else [])
    if unsafe:
        command.append("--unsafe-fixes")
    for report in verified:
        command.extend(["--verified", str(report)])
    command.extend(paths)
    env = {k: v for k, v in os.environ.items() if k != "JAXMEM_NO_SHORTCUTS"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)

"""Load the user's functions and example inputs, and ask the analysis what to donate."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import Any

_LOADED_FILES: dict[str, Any] = {}
# JXM002 (dead but not rebound, usually a fresh batch) is left out: no
# output usually matches it, and verifying it would fail most functions.
PROPOSING_CODES = ("JXM001",)


def ensure_import_path(*directories: str) -> None:
    """Put the user's directories first on ``sys.path`` (like ``python script.py`` does)."""
    for directory in reversed([d for d in directories if d]):
        directory = os.path.abspath(directory)
        if directory not in sys.path:
            sys.path.insert(0, directory)


def import_reference(reference: str) -> Any:
    """``"pkg.mod:Qual.name"`` -> the object; ``ImportError``/``AttributeError`` say which part failed."""
    module_name, _, qualname = reference.partition(":")
    module = importlib.import_module(module_name)
    return attribute_path(module, qualname, module_name)


def attribute_path(module, qualname: str, where: str) -> Any:
    """Follow ``Qual.name`` from ``module``."""
    if "<locals>" in qualname:
        raise AttributeError(
            f"{qualname} is defined inside a function, so it cannot be imported; "
            "verify it from a test with jaxmem.runtime_check.verify(...) instead")
    target = module
    for part in qualname.split("."):
        if not hasattr(target, part):
            raise AttributeError(f"{where} has no attribute {qualname!r} (missing {part!r})")
        target = getattr(target, part)
    return target


def load_file_module(path: str):
    """Import a script by path without running its ``if __name__ == "__main__":`` block."""
    path = os.path.abspath(path)
    if path in _LOADED_FILES:
        return _LOADED_FILES[path]
    name = "_jaxmem_script_" + str(len(_LOADED_FILES))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    ensure_import_path(os.path.dirname(path))
    spec.loader.exec_module(module)
    _LOADED_FILES[path] = module
    return module


def load_function(module_name: str, qualname: str, code_path: str | None) -> Any:
    """A recorded function: by module name, or by file for code run as ``__main__``."""
    if module_name == "__main__" or module_name.startswith("_jaxmem_script_"):
        if not code_path:
            raise ImportError(f"{qualname} was defined in __main__ without a file; it cannot be reloaded")
        return attribute_path(load_file_module(code_path), qualname, code_path)
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        # A module imported under a name that is not on sys.path (pytest's
        # importlib mode, a script's helper): load it from its file instead.
        if not code_path or not os.path.exists(code_path):
            raise
        return attribute_path(load_file_module(code_path), qualname, code_path)
    return attribute_path(module, qualname, module_name)


def plain_function(obj) -> Any:
    """The Python function under a ``jax.jit``/``jax.pmap`` result (or ``obj`` itself)."""
    if hasattr(obj, "_jit_info") and hasattr(obj, "_fun"):
        return obj._fun
    return getattr(obj, "__wrapped__", obj)


@dataclass(frozen=True)
class Proposal:
    """A donation the static analysis proposes for one definition."""

    parameter_index: int | None
    parameter_name: str | None
    code: str
    confidence: str


def proposed_donations(path: str) -> tuple[dict[int, list[Proposal]], str | None]:
    """``{definition line: proposals}`` for the file at ``path``, and a note when unavailable.

    The analysis is the whole project's (as ``jaxmem check`` runs it: every
    call site in the project counts), so its confidence is the one ``check``
    and ``jaxmem-fix`` report.
    """
    if not os.path.isfile(path):
        return {}, f"{path}: cannot read the source for the static analysis (no such file)"
    try:
        import dataclasses

        from jaxmem.api import check_paths
        from jaxmem.config import load_config
        from jaxmem.findings import Confidence

        settings = dataclasses.replace(load_config([path]).settings, min_confidence=Confidence.LOW)
        reports = check_paths([path], settings)
    except NotImplementedError:
        return {}, "the static analysis is not available in this jaxmem build; verified the declared donation only"
    except Exception as error:  # noqa: BLE001 - a failing analysis must not stop verification
        return {}, (f"the static analysis failed on {path} ({type(error).__name__}: {error}); "
                    "verified the declared donation only")
    proposals: dict[int, list[Proposal]] = {}
    for report in reports:
        for finding in report.findings:
            if finding.code not in PROPOSING_CODES or finding.definition_line is None:
                continue
            if os.path.abspath(finding.definition_path or report.path) != os.path.abspath(path):
                continue
            confidence = getattr(finding.confidence, "value", str(finding.confidence))
            proposals.setdefault(finding.definition_line, []).append(
                Proposal(finding.parameter_index, finding.parameter_name, finding.code, confidence))
    return proposals, None

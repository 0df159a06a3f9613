"""Round trip of jaxmem-fix over real JAX libraries: every edit must be a donation edit.

Downloads pinned wheels from PyPI at run time (``_corpus.py``, cached in
``benchmarks/.cache/``, never committed), copies their ``.py`` files to a
temporary folder and checks two things:

1. **the tool**: ``jaxmem-fix`` (default, then ``--unsafe-fixes``) over
   the whole copy, as a user would run it;
2. **the edit layer on every definition**: for every jitted definition the
   analysis recognises, ask :func:`add_donations` to donate its first
   parameter that is neither static nor donated yet.  This exercises each
   definition form real code uses, far more often than real findings do.

For every changed file: it must parse (``ast`` and libcst), its syntax tree
must equal the original once donation keywords, ``partial(...)`` wrappers
of decorators and ``functools`` imports are normalised away, and every
changed line must lie inside a jitted definition or be a ``functools``
import.  Run: ``python benchmarks/roundtrip.py`` (exit 1 on any violation).
"""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import DEFAULT_PACKAGES, source_dir  # noqa: E402

import libcst as cst  # noqa: E402

from jaxmem.codemod import add_donations  # noqa: E402
from jaxmem.findings import DonationFix  # noqa: E402
from jaxmem.lint.callables.definitions import parse_definitions  # noqa: E402

DONATION_KEYWORDS = {"donate_argnums", "donate_argnames", "donate"}
EDIT_LAYER_VARIANTS = {
    "argnums, jax < 0.8.1": {"style": "auto", "jax_version": None},
    "argnames, jax >= 0.8.1": {"style": "argnames", "jax_version": "0.9.0"},
}
IMPORT_LINE = re.compile(r"^\s*(from functools import |import functools\b)")


# -- the "only donation edits" check ----------------------------------------

class _Normalise(ast.NodeTransformer):
    """Removes what jaxmem-fix may change: donation keywords, partial() around
    a decorator, an empty decorator call, functools imports."""

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        node.keywords = [k for k in node.keywords if k.arg not in DONATION_KEYWORDS]
        if _is_partial(node.func) and len(node.args) == 1 and not node.keywords:
            return node.args[0]
        return node

    def _decorated(self, node):
        self.generic_visit(node)
        node.decorator_list = [
            d.func if isinstance(d, ast.Call) and not d.args and not d.keywords else d
            for d in node.decorator_list
        ]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _decorated

    def visit_ImportFrom(self, node: ast.ImportFrom):
        if node.module == "functools":
            node.names = [a for a in node.names if a.name != "partial"]
            return node if node.names else None
        return node

    def visit_Import(self, node: ast.Import):
        node.names = [a for a in node.names if not (a.name == "functools" and a.asname is None)]
        return node if node.names else None


def _is_partial(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "partial") or (
        isinstance(func, ast.Attribute) and func.attr == "partial"
    )


def _normalised(text: str) -> str:
    return ast.dump(_Normalise().visit(ast.parse(text)))


def _definition_lines(text: str) -> set[int]:
    _, sites = parse_definitions(text)
    lines: set[int] = set()
    for site in sites:
        lines.update(range(site.definition.line, site.definition.end_line + 1))
    return lines


def violations(original: str, fixed: str) -> list[str]:
    """Why ``fixed`` is more than a donation edit of ``original`` (empty when it is not)."""
    try:
        ast.parse(fixed)
        cst.parse_module(fixed)
    except (SyntaxError, cst.ParserSyntaxError) as error:
        return [f"does not parse: {error}"]
    problems = []
    if _normalised(original) != _normalised(fixed):
        problems.append("syntax tree differs beyond donation specs and imports")
    allowed = _definition_lines(original)
    before, after = original.splitlines(), fixed.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if all(IMPORT_LINE.match(line) for line in before[i1:i2] + after[j1:j2]):
            continue  # an import added, or merged into an existing functools import
        # Lines replaced, or the two lines around an insertion, must belong to a definition.
        touched = range(i1 + 1, i2 + 1) if tag != "insert" else (i1, i1 + 1)
        if all(n in allowed for n in touched):
            continue
        problems.append(f"lines {i1 + 1}-{max(i2, i1 + 1)} changed outside a jitted definition: {after[j1:j2][:2]}")
    return problems


# -- 1. the tool over the whole tree ------------------------------------------

def run_tool(tree: Path, originals: dict[Path, str], unsafe: bool) -> dict:
    """Run ``jaxmem-fix`` over ``tree`` (a copy) and check every changed file."""
    flags = ["--unsafe-fixes"] if unsafe else []
    command = [sys.executable, "-m", "jaxmem.codemod.cli", "--no-cache", "--jobs", "0", *flags, str(tree)]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    lines = result.stdout.splitlines()
    changed, bad = 0, []
    for path, original in originals.items():
        fixed = path.read_text(encoding="utf-8")
        if fixed != original:
            changed += 1
            bad += [f"{path.relative_to(tree)}: {p}" for p in violations(original, fixed)]
    return {
        "exit": result.returncode,
        "seconds": seconds,
        "edits": [line for line in lines if ": donate " in line],
        "left alone": sum(": not donating " in line or ": refused " in line for line in lines),
        "errors": [line for line in result.stderr.splitlines() if ": error:" in line],
        "changed files": changed,
        "violations": bad,
    }


# -- 2. the edit layer on every definition ------------------------------------

def _first_donatable(site) -> DonationFix | None:
    definition = site.definition
    signature, spec = definition.signature, definition.spec
    if signature is None or not spec.known:
        return None
    statics = (spec.static_indices or frozenset(), spec.static_names or frozenset())
    for index, param in enumerate(signature.positional):
        if index < definition.shift or index in statics[0] or param.name in statics[1]:
            continue
        if index in spec.indices or param.name in spec.names:
            continue
        return DonationFix(definition.line, index, param.name)
    return None


def run_every_definition(originals: dict[Path, str], root: Path, **options) -> dict:
    """Donate one more parameter on every definition, file by file, and check the results.

    ``options`` go to :func:`add_donations` (``style``, ``jax_version``).
    """
    counts = collections.Counter()
    reasons = collections.Counter()
    bad: list[str] = []
    for path, text in originals.items():
        try:
            _, sites = parse_definitions(text)
        except (cst.ParserSyntaxError, RecursionError):
            counts["unparsable"] += 1
            continue
        counts["definitions"] += len(sites)
        counts.update(f"form {site.definition.form}" for site in sites)
        fixes = [fix for site in sites if (fix := _first_donatable(site)) is not None]
        if not fixes:
            continue
        counts["proposed"] += len(fixes)
        try:
            result = add_donations(text, fixes, **options)
        except Exception as error:  # noqa: BLE001 - a crash is a finding of this benchmark
            bad.append(f"{path.relative_to(root)}: add_donations raised {type(error).__name__}: {error}")
            continue
        counts["edits"] += len(result.edits)
        counts["left alone"] += len(result.skipped)
        reasons.update(_reason_kind(s.reason) for s in result.skipped)
        if result.error:
            bad.append(f"{path.relative_to(root)}: {result.error}")
        if result.changed:
            counts["changed files"] += 1
            bad += [f"{path.relative_to(root)}: {p}" for p in violations(text, result.source)]
    return {"counts": counts, "reasons": reasons, "violations": bad}


def _reason_kind(reason: str) -> str:
    return re.sub(r"`[^`]*`", "`…`", reason.split(";")[0])[:90]


# -- main -------------------------------------------------------------------

def _parse_package(text: str) -> tuple[str, str]:
    name, _, version = text.partition("==")
    if not version:
        raise argparse.ArgumentTypeError(f"{text!r}: pin a version, e.g. flax==0.12.8")
    return name, version


def main(argv=None) -> int:
    """Run both round trips and print the figures; exit 1 on any violation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", type=_parse_package,
                        help="name==version wheels to use (default: %s)"
                        % " ".join(f"{n}=={v}" for n, v in DEFAULT_PACKAGES))
    args = parser.parse_args(argv)
    packages = args.packages or DEFAULT_PACKAGES
    failed = False
    with tempfile.TemporaryDirectory(prefix="jaxmem-roundtrip-") as scratch:
        for mode in ("default", "unsafe"):
            tree = Path(scratch) / mode
            for name, version in packages:
                shutil.copytree(source_dir(name, version), tree / f"{name}-{version}")
            (tree / "pyproject.toml").write_text('[project]\nname = "roundtrip"\n')
            originals = {p: p.read_text(encoding="utf-8") for p in sorted(tree.rglob("*.py"))}
            if mode == "default":
                print(f"corpus: {', '.join(f'{n}=={v}' for n, v in packages)}: {len(originals)} files, "
                      f"{sum(t.count(chr(10)) for t in originals.values()):,} lines")
                every = {
                    variant: run_every_definition(originals, tree, **options)
                    for variant, options in EDIT_LAYER_VARIANTS.items()
                }
            figures = run_tool(tree, originals, unsafe=(mode == "unsafe"))
            flag = " --unsafe-fixes" if mode == "unsafe" else ""
            print(f"jaxmem-fix{flag}: exit {figures['exit']}, {figures['seconds']:.1f} s, "
                  f"{len(figures['edits'])} edits in {figures['changed files']} files, "
                  f"{figures['left alone']} left alone, {len(figures['errors'])} files not parsed, "
                  f"{len(figures['violations'])} violations")
            for line in figures["edits"]:
                print(f"  {line.replace(str(tree) + '/', '')}")
            for line in figures["errors"][:5]:
                print(f"  {line}")
            for line in figures["violations"]:
                print(f"  VIOLATION {line}")
            failed |= bool(figures["violations"])
    for variant, outcome in every.items():
        counts = outcome["counts"]
        forms = ", ".join(f"{k[5:]} {v}" for k, v in sorted(counts.items()) if k.startswith("form "))
        print(f"edit layer, every definition, {variant}: {counts['definitions']} definitions ({forms}); "
              f"{counts['proposed']} donations proposed, {counts['edits']} edits in {counts['changed files']} "
              f"files, {counts['left alone']} left alone, {counts['unparsable']} files not parsed, "
              f"{len(outcome['violations'])} violations")
        for reason, number in outcome["reasons"].most_common():
            print(f"  left alone {number}x: {reason}")
        for line in outcome["violations"]:
            print(f"  VIOLATION {line}")
        failed |= bool(outcome["violations"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Verify many functions: the entries of ``jaxmem.yaml`` or the calls of a record file."""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import asdict, dataclass, field

from jaxmem.runtime_check.config import VerifyEntry, to_abstract
from jaxmem.runtime_check.report import VerifyReport
from jaxmem.runtime_check.signatures import UnrestorableArgument, decode_value, describe
from jaxmem.runtime_check.sources import (
    ensure_import_path, import_reference, load_function, plain_function, proposed_donations,
)

MAX_SIGNATURES_PER_FUNCTION = 5


@dataclass
class Problem:
    """A function that could not be verified (``failed``) or had nothing to verify."""

    function: str
    location: str | None
    message: str
    failed: bool = True


@dataclass
class VerifyRun:
    """The outcome of one ``jaxmem verify``."""

    reports: list[VerifyReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when something was verified, every donation was reused and nothing failed."""
        return bool(self.reports) and all(r.ok for r in self.reports) and not any(p.failed for p in self.problems)

    def to_dict(self) -> dict:
        """The JSON form (``jaxmem verify --format json``; input of ``jaxmem-fix --verified``)."""
        return {"format": "jaxmem-verify", "version": 1, "ok": self.ok,
                "reports": [r.to_dict() for r in self.reports],
                "problems": [asdict(p) for p in self.problems], "notes": list(self.notes)}


def _as_tuple(value) -> tuple:
    if value is None:
        return ()
    return (value,) if isinstance(value, (int, str)) else tuple(value)


def _verify(fn, args, kwargs, **spec) -> VerifyReport:
    from jaxmem.runtime_check.targets import resolve_target
    from jaxmem.runtime_check.verifier import verify_target

    backend = spec.pop("backend", None)
    target = resolve_target(fn, **spec)
    return verify_target(target, tuple(args), dict(kwargs), backend=backend)


def verify_entries(entries: list[VerifyEntry], base_dir: str) -> VerifyRun:
    """Verify every ``jaxmem.yaml`` entry (imports resolved from ``base_dir``)."""
    ensure_import_path(base_dir)
    run = VerifyRun()
    for entry in entries:
        try:
            fn = import_reference(entry.function)
            args, kwargs = _entry_inputs(entry)
            run.reports.append(_verify(
                fn, args, kwargs, donate_argnums=entry.donate_argnums, donate_argnames=entry.donate_argnames,
                static_argnums=entry.static_argnums, static_argnames=entry.static_argnames,
                backend=entry.backend))
        except Exception as error:  # noqa: BLE001 - one broken entry must not hide the others
            run.problems.append(Problem(entry.function, None, f"{type(error).__name__}: {error}"))
    return run


def _entry_inputs(entry: VerifyEntry) -> tuple[tuple, dict]:
    if entry.example_args is None:
        return tuple(to_abstract(list(entry.args))), to_abstract(dict(entry.kwargs))
    made = import_reference(entry.example_args)()
    if isinstance(made, dict) and set(made) <= {"args", "kwargs"}:
        return tuple(made.get("args", ())), dict(made.get("kwargs", {}))
    if isinstance(made, (tuple, list)):
        return tuple(made), {}
    raise TypeError(f"{entry.example_args} returned {type(made).__name__}; it must return a tuple of "
                    "positional arguments or {'args': (...), 'kwargs': {...}}")


def declared_and_proposed(entry: dict, fn, proposals) -> tuple[tuple[int, ...], tuple[str, ...], dict]:
    """The declared donation plus the analysis' proposals, normalised like jax.jit does."""
    from jaxmem.runtime_check.leaves import parameter_names

    options = entry.get("options", {})
    nums = set(_as_tuple(options.get("donate_argnums")))
    names = set(_as_tuple(options.get("donate_argnames")))
    positional, _ = parameter_names(fn)
    sources = {}
    for index in nums:
        sources[positional[index] if index < len(positional) else f"args[{index}]"] = "declared"
    for name in names:
        sources[name] = "declared"
    for proposal in proposals:
        if proposal.parameter_index is not None:
            nums.add(proposal.parameter_index)
        elif proposal.parameter_name:
            names.add(proposal.parameter_name)
        label = proposal.parameter_name or f"args[{proposal.parameter_index}]"
        sources.setdefault(label, f"proposed ({proposal.code}, {proposal.confidence} confidence)")
    if entry.get("transform") == "pmap":
        return tuple(sorted(nums)), (), sources
    if names:
        names |= {positional[i] for i in nums if i < len(positional)}
        nums |= {positional.index(n) for n in names if n in positional}
    return tuple(sorted(nums)), tuple(sorted(names)), sources


def verify_record(record: dict, backend: str | None = None) -> VerifyRun:
    """The verification of every function of a record file, with its declared and proposed donation.

    Each signature was verified while the program ran (see :mod:`recorder`);
    with ``backend`` the signatures that can be rebuilt from the record are
    compiled again for that backend.  A record without functions is a
    ``ValueError``: nothing ran that could be verified.
    """
    functions = record.get("functions", [])
    if not functions:
        command = " ".join(record.get("argv", [])) or "the program"
        raise ValueError(
            f"the record holds no jitted calls: `{command}` called no jax.jit, jax.pmap, nnx.jit or "
            "eqx.filter_jit function defined in your own files; run it so that it reaches a training step")
    run = VerifyRun()
    ensure_import_path(record.get("cwd", ""))
    for entry in functions:
        location = f"{entry['definition_path']}:{entry['definition_line']}"
        for error in entry.get("errors", []):
            run.problems.append(Problem(entry["qualname"], location, f"recording failed: {error}"))
        signatures = entry.get("signatures", [])
        if len(signatures) > MAX_SIGNATURES_PER_FUNCTION:
            run.notes.append(f"{entry['qualname']} ({location}): verified the first "
                             f"{MAX_SIGNATURES_PER_FUNCTION} of {len(signatures)} recorded signatures")
        for signature in signatures[:MAX_SIGNATURES_PER_FUNCTION]:
            _add_recorded(run, entry, signature, location, backend)
    return run


def _add_recorded(run: VerifyRun, entry: dict, signature: dict, location: str, backend: str | None) -> None:
    text = ", ".join([*map(describe, signature["args"]),
                      *(f"{k}={describe(v)}" for k, v in signature["kwargs"].items())])
    name = entry["qualname"]
    if backend is not None and _rebuildable(signature):
        _verify_signatures(run, entry, signature, text, location, backend)
        return
    if "report" in signature:
        report = VerifyReport.from_dict(signature["report"])
        _label(report, entry, signature, text)
        if backend is not None:
            report.notes.append(f"verified on {report.backend} while recording: these arguments cannot be "
                                f"rebuilt for --backend {backend}; record on that backend instead")
        run.reports.append(report)
    elif "verify_error" in signature:
        run.problems.append(Problem(name, location, f"({text}): verification failed: {signature['verify_error']}"))
    elif "skipped" in signature:
        run.problems.append(Problem(name, location, signature["skipped"], failed=False))
    else:
        run.problems.append(Problem(name, location, f"({text}): the record holds no verification for this "
                                    "signature; record it again with this jaxmem"))


def _rebuildable(signature: dict) -> bool:
    if signature.get("repeated"):
        return False
    try:
        for value in [*signature["args"], *signature["kwargs"].values()]:
            decode_value(value)
    except UnrestorableArgument:
        return False
    return True


def _label(report: VerifyReport, entry: dict, signature: dict, text: str) -> None:
    module = entry.get("module")
    report.function = entry["qualname"] if module in (None, "__main__") else f"{module}.{entry['qualname']}"
    report.definition_path = entry["definition_path"]
    report.definition_line = entry["definition_line"]
    report.signature = f"{text}  [{signature.get('calls', 1)} call(s)]"


def _verify_signatures(run: VerifyRun, entry: dict, signature: dict, text: str, location: str,
                       backend: str) -> None:
    """Compile one recorded signature again, rebuilt from the record, for ``backend``."""
    name = entry["qualname"]
    try:
        fn = plain_function(load_function(entry["module"], name, entry.get("code_path")))
        path = entry["definition_path"]
        proposals, _ = proposed_donations(path)
        nums, names, sources = declared_and_proposed(entry, fn, proposals.get(entry["definition_line"], []))
        if not nums and not names:
            run.problems.append(Problem(name, location, "donates nothing and the static analysis proposes "
                                        "no donation: nothing to verify", failed=False))
            return
        options = entry.get("options", {})
        args = [decode_value(value) for value in signature["args"]]
        kwargs = {key: decode_value(value) for key, value in signature["kwargs"].items()}
        spec = {"donate_argnums": nums or None, "donate_argnames": names or None, "backend": backend}
        if entry.get("transform") == "pmap":
            import jax

            spec["wrapper"] = functools.partial(
                jax.pmap, axis_name=options.get("axis_name"), in_axes=options.get("in_axes", 0),
                static_broadcasted_argnums=tuple(_as_tuple(options.get("static_broadcasted_argnums"))))
            spec["donate_argnames"] = None
        else:
            spec["static_argnums"] = options.get("static_argnums")
            spec["static_argnames"] = options.get("static_argnames")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = _verify(fn, args, kwargs, **spec)
    except Exception as error:  # noqa: BLE001
        run.problems.append(Problem(name, location, f"({text}): verification failed: {type(error).__name__}: {error}"))
        return
    _label(report, entry, signature, text)
    report.donation_sources = dict(sources)
    run.reports.append(report)


def relative(path: str) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel

"""``jaxmem record``: run a program with jit wrapped and write its call signatures.

The record file (JSON, ``"format": "jaxmem-record"``) holds one entry per
jitted definition (``jax.jit``, ``jax.pmap``, ``nnx.jit``,
``eqx.filter_jit``), keyed like the static analysis keys it: definition
file and line (the decorator line for decorated functions, the
``jax.jit(...)`` line for wrapped ones), plus the function's
``co_firstlineno``, module and qualname, the transform's options, and each
distinct abstract signature (shapes, dtypes, shardings, static values) with
its call count.

Each new signature (up to :data:`VERIFIED_SIGNATURES` per function) is also
verified while the program runs, on the real arguments: that is the only
place where custom pytrees (a flax ``TrainState``), nnx and equinox modules,
bound methods, shardings and the identity of arrays (the same buffer passed
twice) are all known.  The report goes into the record; ``jaxmem verify
--record`` prints it.  Nothing in a record is pickled.
"""

from __future__ import annotations

import json
import os
import platform
import warnings
from contextlib import contextmanager

from jaxmem.runtime_check.jit_patch import JitDefinition, TransformedProxy, patched_transforms
from jaxmem.runtime_check.signatures import encode_static, encode_value

RECORD_FORMAT = "jaxmem-record"
RECORD_VERSION = 2  # 2: no pickled values; signatures carry the report verified while recording
VERIFIED_SIGNATURES = 5
_ANALYSES: dict[str, dict] = {}
_OPTION_KEYS = ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
                "keep_unused", "axis_name", "in_axes", "static_broadcasted_argnums", "donate")


def is_library_path(path: str) -> bool:
    """Whether ``path`` is an installed library (or not a file): its jits are not the user's."""
    normalized = path.replace("\\", "/")
    return "/site-packages/" in normalized or "/dist-packages/" in normalized or path.startswith("<")


def _absolute(path: str | None) -> str | None:
    return path if path is None or path.startswith("<") else os.path.abspath(path)


def _plain_options(options: dict) -> dict:
    plain = {}
    for key in _OPTION_KEYS:
        value = options.get(key)
        if value is None:
            continue
        if isinstance(value, (tuple, list)):
            value = list(value)
        if isinstance(value, (int, str, bool, list)):
            plain[key] = value
    return plain


class SignatureRecorder:
    """Collects call signatures per definition."""

    def __init__(self):
        self.entries: dict[tuple[str, int], dict] = {}

    def wrap(self, transformed, definition: JitDefinition):
        """What the patched ``jax.jit`` returns: the real function, with calls recorded."""
        if is_library_path(definition.path):
            return transformed
        return TransformedProxy(transformed, definition, self._around_call)

    def _around_call(self, transformed, definition: JitDefinition, args, kwargs, caller):
        try:
            self._record(transformed, definition, args, kwargs)
        except Exception as error:  # noqa: BLE001 - recording must never break the program
            entry = self._entry(definition)
            entry.setdefault("errors", []).append(f"{type(error).__name__}: {error}")
        return transformed(*args, **kwargs)

    def _entry(self, definition: JitDefinition) -> dict:
        entry = self.entries.get(definition.key)
        if entry is None:
            entry = self.entries[definition.key] = {
                "definition_path": _absolute(definition.path), "definition_line": definition.line,
                "code_path": _absolute(definition.code_path), "code_first_line": definition.code_first_line,
                "module": definition.module, "qualname": definition.qualname,
                "transform": definition.transform, "options": _plain_options(definition.options),
                "signatures": [],
            }
        return entry

    def _record(self, transformed, definition: JitDefinition, args, kwargs) -> None:
        entry = self._entry(definition)
        static_nums, static_names = _static_positions(definition, len(args))
        encoded_args = [encode_static(value) if index in static_nums else encode_value(value)
                        for index, value in enumerate(args)]
        encoded_kwargs = {key: encode_static(value) if key in static_names else encode_value(value)
                          for key, value in kwargs.items()}
        repeated = _repeated_arrays(args, kwargs)
        for known in entry["signatures"]:
            if (known["args"] == encoded_args and known["kwargs"] == encoded_kwargs
                    and known.get("repeated", False) == repeated):
                known["calls"] += 1
                return
        signature = {"args": encoded_args, "kwargs": encoded_kwargs, "calls": 1}
        if repeated:
            signature["repeated"] = True
        if len(entry["signatures"]) < VERIFIED_SIGNATURES:
            signature.update(_verify_call(entry, transformed, args, kwargs))
        entry["signatures"].append(signature)

    def to_json(self, argv: list[str]) -> dict:
        """The record file's contents."""
        import jax

        return {
            "format": RECORD_FORMAT, "version": RECORD_VERSION, "argv": list(argv), "cwd": os.getcwd(),
            "python": platform.python_version(), "jax": jax.__version__, "backend": jax.default_backend(),
            "functions": sorted(self.entries.values(), key=lambda e: (e["definition_path"], e["definition_line"])),
        }


def _repeated_arrays(args, kwargs) -> bool:
    """Whether one array object is passed more than once (it cannot then be donated)."""
    import jax

    seen = set()
    for leaf in jax.tree_util.tree_leaves((args, kwargs)):
        if isinstance(leaf, jax.Array):
            if id(leaf) in seen:
                return True
            seen.add(id(leaf))
    return False


def _verify_call(entry: dict, transformed, args, kwargs) -> dict:
    """``{"report": ...}`` for one call verified on its real arguments, or ``{"verify_error": ...}``."""
    from jaxmem.runtime_check.runs import declared_and_proposed
    from jaxmem.runtime_check.sources import plain_function, proposed_donations
    from jaxmem.runtime_check.targets import library_kind, resolve_target, split_bound
    from jaxmem.runtime_check.verifier import verify_target

    try:
        fn, args = split_bound(transformed, tuple(args))
        path = entry["definition_path"]
        if path not in _ANALYSES:  # one static analysis per file, however many signatures
            _ANALYSES[path] = proposed_donations(path)[0]
        proposals = _ANALYSES[path].get(entry["definition_line"], [])
        if library_kind(fn) == "eqx":
            fn, sources = _equinox_mode(fn, proposals, args, kwargs)
            if fn is None:
                return {"skipped": sources}
            proposals = []
        nums, names, sources = declared_and_proposed(entry, plain_function(fn), proposals)
        proposed = any(source != "declared" for source in sources.values())
        if not nums and not names and library_kind(fn) != "eqx":
            return {"skipped": "donates nothing and the static analysis proposes no donation"}
        target = resolve_target(fn, donate_argnums=(nums or None) if proposed else None,
                                donate_argnames=(names or None) if proposed else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = verify_target(target, args, dict(kwargs))
        report.donation_sources = dict(sources)
        return {"report": report.to_dict()}
    except Exception as error:  # noqa: BLE001 - reported by `jaxmem verify --record`
        return {"verify_error": f"{type(error).__name__}: {error}"}


def _equinox_mode(fn, proposals, args, kwargs):
    """``(eqx.filter_jit object to verify, why not)``: its own donate mode, else the mode the proposals make.

    equinox donates by mode (``donate='all'``, ``'all-except-first'``), never
    by position; a proposal is verified when a mode donates exactly it.
    """
    from jaxmem.runtime_check.confirm import _CannotDonate, _equinox_variant, _python_function
    from jaxmem.runtime_check.leaves import parameter_names

    if fn.donate_first or fn.donate_rest:
        return fn, None
    if not proposals:
        return None, "eqx.filter_jit(donate='none') and the static analysis proposes no donation"
    positional = parameter_names(_python_function(fn))[0]
    nums = {p.parameter_index for p in proposals if p.parameter_index is not None}
    nums |= {positional.index(p.parameter_name) for p in proposals if p.parameter_name in positional}
    try:
        return _equinox_variant(fn, nums, positional, args, kwargs), None
    except _CannotDonate as reason:
        wanted = ", ".join(f"`{positional[i]}`" if i < len(positional) else f"#{i}" for i in sorted(nums))
        return None, f"the static analysis proposes donating {wanted}, but {reason}"


def _static_positions(definition: JitDefinition, arg_count: int) -> tuple[set[int], set[str]]:
    options = definition.options
    nums = options.get("static_argnums")
    if nums is None:  # 0 is a position, not "none"
        nums = options.get("static_broadcasted_argnums")
    nums = () if nums is None else nums
    names = options.get("static_argnames") or ()
    nums = {nums} if isinstance(nums, int) else set(nums)
    names = {names} if isinstance(names, str) else set(names)
    nums = {n % arg_count for n in nums} if arg_count else set()
    return nums, names


@contextmanager
def recording(out_path: str, argv: list[str]):
    """Record signatures of every jitted call in the block into ``out_path``."""
    recorder = SignatureRecorder()
    with patched_transforms(recorder.wrap):
        try:
            yield recorder
        finally:
            with open(out_path, "w", encoding="utf-8") as handle:
                json.dump(recorder.to_json(argv), handle, indent=1)
                handle.write("\n")


def load_record(path: str) -> dict:
    """Read and check a record file; ``ValueError`` naming the file when it is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as error:
        raise ValueError(f"{path}: cannot read the record file ({error.strerror}); "
                         "create it with `jaxmem record --out FILE -- python script.py`") from error
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a jaxmem record file (invalid JSON at line {error.lineno})") from error
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        raise ValueError(f"{path}: not a jaxmem record file (missing \"format\": \"{RECORD_FORMAT}\")")
    if data.get("version") != RECORD_VERSION:
        raise ValueError(f"{path}: record format version {data.get('version')} is not supported "
                         f"(this jaxmem reads version {RECORD_VERSION}); record it again")
    return data

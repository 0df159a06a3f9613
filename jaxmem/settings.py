"""The analysis settings: plain data, built from defaults, config and flags."""

from __future__ import annotations

from dataclasses import dataclass

from jaxmem.findings import Confidence

# Larger files are reported, not read: a hostile "huge.py" cannot exhaust memory.
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
# Files a folder is searched for, as ruff's default ``include``.
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")
# The cache of a 2,869-file project takes about 29 MiB; beyond the cap the
# entries used longest ago are removed.
DEFAULT_CACHE_MAX_SIZE = 256 * 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """Everything that changes what the analysis reports.

    ``select``/``ignore`` hold code prefixes (``"JXM1"`` selects JXM101..107).
    ``extra_wrappers`` are dotted names of functions that behave like
    ``jax.jit`` (take the function first and forward ``donate_argnums``).
    ``donation_style`` is ``"auto"`` (follow the file, then the project),
    ``"argnums"`` or ``"argnames"``.
    ``jax_version`` is the oldest jax the project supports (``"0.4.30"``),
    or ``None`` for "the installed one"; the codemod uses it to pick
    spellings that version understands.
    ``max_file_size`` is the largest file, in bytes, that is read at all
    (it changes which files are read, not what is found in them).
    ``cache_max_size`` caps ``.jaxmem_cache/`` in bytes (it changes how
    long results are kept, not the results).
    ``target_version`` is the Python grammar files are parsed with
    (``"3.12"``); ``None`` means the newest libcst knows.  The host
    interpreter's version never decides what is a syntax error.
    ``include`` are the file-name globs a folder is searched for
    (notebooks included); ``per_file_ignores`` maps path globs to the code
    prefixes ignored in the files they match (ruff's ``per-file-ignores``).
    ``own_packages`` are the project's top-level packages whose names jaxmem
    otherwise takes for libraries (``optax`` when checking optax itself): their
    private names are the project's, followed like any other (public ones are
    proposed at medium anyway); set from the project root by
    :func:`jaxmem.config.load_config`, not by the user.
    """

    select: tuple[str, ...] = ("JXM",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    min_confidence: Confidence = Confidence.MEDIUM
    extra_wrappers: tuple[str, ...] = ()
    donation_style: str = "auto"
    jax_version: str | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    target_version: str | None = None
    include: tuple[str, ...] = DEFAULT_INCLUDE
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cache_max_size: int = DEFAULT_CACHE_MAX_SIZE
    own_packages: tuple[str, ...] = ()

    def wants(self, code: str) -> bool:
        """Whether ``code`` passes ``select``/``ignore`` (longest prefix wins)."""
        sel = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        ign = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return sel >= 0 and sel > ign

    def fingerprint(self) -> str:
        """A stable string identifying these settings, for cache keys."""
        return repr(
            (self.select, self.ignore, self.min_confidence.value,
             self.extra_wrappers, self.donation_style, self.jax_version, self.target_version,
             self.own_packages)
        )

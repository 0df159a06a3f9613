"""The ``jaxmem check`` pipeline as a function: paths in, one report per file out.

discovery -> sources -> cache -> ``engine.facts_for_file`` (per file, in
worker processes with ``jobs > 1``) -> ``engine.report`` (joins all files,
so a call in one file of a function jitted in another resolves) -> select /
ignore / min-confidence / ``# noqa`` -> sorted.

A file that cannot be read or decoded gets a JXM900 finding; an exception
inside the engine on one file becomes a JXM900 "internal error" finding for
that file, and every other file is still checked.
"""

from __future__ import annotations

import os
from pathlib import Path
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from jaxmem.cache import FactsCache
from jaxmem.config import load_config
from jaxmem.discovery import STDIN, discover
from jaxmem.findings import FileReport, Finding
from jaxmem.noqa import NoqaMap, is_suppressed, parse_noqa
from jaxmem.settings import Settings
from jaxmem.sources import PARSE_ERROR_CODE, parse_error_finding, read_source

INTERNAL_ERROR_PREFIX = "internal error: "


def check_paths(
    paths=(".",),
    settings: Settings | None = None,
    *,
    jobs: int = 1,
    use_cache: bool = True,
    progress=None,
    config_file: str | os.PathLike | None = None,
    force_exclude: bool = False,
    stdin_filename: str | None = None,
    stdin=None,
    whole_project: bool = True,
) -> list[FileReport]:
    """Check ``paths`` and return one :class:`FileReport` per file, sorted by path.

    ``settings`` defaults to the ``[tool.jaxmem]`` configuration found from
    the first path (``config_file`` overrides the search).  ``jobs`` is the
    number of worker processes (0: one per CPU).  ``progress(done, total,
    path)`` is called as each file is analysed.  ``-`` reads stdin, reported
    as ``stdin_filename``.  With ``whole_project`` (the default) the other
    Python files of the project (the folder holding ``pyproject.toml`` or
    ``.git``) are analysed too, without being reported, so that a proposal
    made for a staged file accounts for every call site.  Raises :class:`jaxmem.config.ConfigError` and
    :class:`jaxmem.discovery.DiscoveryError` for bad input; any exception
    from ``engine.report`` propagates.
    """
    paths = [str(p) for p in paths] or ["."]
    config = load_config(paths, config_file)
    settings = settings if settings is not None else config.settings
    files = discover(paths, root=config.root, exclude=settings.exclude,
                     force_exclude=force_exclude)
    context = context_files(paths, files, config.root, settings, stdin_filename) if whole_project else []
    cache = FactsCache(config.root, settings) if use_cache else None
    run = _Run(settings, cache, progress, total=len(files), context=set(context))

    from jaxmem.lint import engine

    sources = []
    for path in files + context:
        source = read_source(path, stdin_filename=stdin_filename, stdin=stdin)
        if source.problem is not None:
            if path not in run.context:
                run.order.append(source.path)
                run.problem(source.path, source.problem)
        else:
            run.order.append(source.path)
            sources.append((path, source))
    # Names defined by files that mention jit: a file that never mentions
    # jit still matters when it calls one of them.
    hints = engine.project_hints({source.path: source.text for _, source in sources})
    pending = []
    for path, source in sources:
        run.noqa[source.path] = parse_noqa(source.text)
        if not engine.might_involve_jit(source.text, settings, hints):
            # Skipped by the engine (after a cheap syntax check); never cached.
            run.store((source.path, source.text, source.digest, False),
                      facts_or_error(source.path, source.text, settings, hints))
            continue
        # Which parts of a file are analysed depends on the names it can call
        # from other files' jitted functions: those belong in the cache key.
        digest = _facts_digest(source.digest, engine.reachable_hints(source.text, hints))
        cacheable = cache is not None and path != STDIN
        cached = cache.get(source.path, digest) if cacheable else None
        if cached is not None:
            run.add_facts(source.path, cached)
        else:
            pending.append((source.path, source.text, digest, cacheable))
    run.compute(pending, jobs, hints)
    return run.finish()


def context_files(paths, files: list[str], root, settings: Settings, stdin_filename: str | None = None) -> list[str]:
    """The project's other Python files: their calls decide the advice for ``files``.

    Empty when no project root is marked (no ``pyproject.toml`` or ``.git``
    above the paths) or when the run already covers the root folder.
    """
    root = Path(root)
    if not ((root / "pyproject.toml").is_file() or (root / ".git").exists()):
        return []
    resolved_root = root.resolve()
    if any(p != STDIN and os.path.isdir(p) and Path(p).resolve() == resolved_root for p in paths):
        return []
    seen = {os.path.realpath(f) for f in files if f != STDIN}
    if stdin_filename:
        seen.add(os.path.realpath(stdin_filename))
    out = []
    for path in discover([str(root)], root=root, exclude=settings.exclude):
        if os.path.realpath(path) not in seen:
            relative = os.path.relpath(path)
            out.append(path if relative.startswith("..") else relative)
    return out


def _facts_digest(content_digest: str, reachable_hints) -> str:
    """The cache key of a file's facts: its contents plus the other files' names it may call."""
    return content_digest + "|" + ",".join(sorted(reachable_hints))


def is_internal_error(finding: Finding) -> bool:
    """Whether ``finding`` reports a bug in jaxmem rather than in the checked code."""
    return finding.code == PARSE_ERROR_CODE and finding.message.startswith(INTERNAL_ERROR_PREFIX)


def internal_error_finding(path: str, error: BaseException) -> Finding:
    """A JXM900 finding describing an exception raised while analysing ``path``."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    detail = f"{type(error).__name__}: {error}".rstrip(": ")
    return parse_error_finding(
        path, f"{INTERNAL_ERROR_PREFIX}{detail}{where}, please report it to the jaxmem developers"
    )


def facts_or_error(path: str, text: str, settings: Settings, hints=frozenset()):
    """``("facts", facts)`` or ``("error", finding)``; runs in worker processes."""
    from jaxmem.lint import engine

    try:
        return "facts", engine.facts_for_file(path, text, settings, hints)
    except Exception as error:  # a bug on one file must not stop the run
        return "error", internal_error_finding(path, error)


@dataclass
class _Run:
    """The state of one check: facts gathered so far, problems, noqa comments."""

    settings: Settings
    cache: FactsCache | None
    progress: object
    total: int
    facts: dict = field(default_factory=dict)
    problems: dict = field(default_factory=dict)
    noqa: dict[str, NoqaMap] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    done: int = 0
    context: set = field(default_factory=set)  # analysed for their calls, not reported

    def add_facts(self, path: str, facts) -> None:
        self.facts[path] = facts
        self._tick(path)

    def problem(self, path: str, finding: Finding) -> None:
        self.problems[path] = finding
        self._tick(path)

    def compute(self, pending: list, jobs: int, hints: frozenset) -> None:
        """Run the engine on every ``(path, text, digest, cacheable)`` in ``pending``."""
        workers = (os.cpu_count() or 1) if jobs <= 0 else jobs
        workers = min(workers, len(pending))
        remaining = list(pending)
        if workers > 1:
            remaining = self._compute_in_pool(remaining, workers, hints)
        for item in remaining:
            self.store(item, facts_or_error(item[0], item[1], self.settings, hints))

    def _compute_in_pool(self, pending: list, workers: int, hints: frozenset) -> list:
        """Analyse in worker processes; returns what is left if the pool broke."""
        left = {item[0]: item for item in pending}
        try:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = {
                    pool.submit(facts_or_error, path, text, self.settings, hints): path
                    for path, text, _, _ in pending
                }
                for future in as_completed(futures):
                    item = left.pop(futures[future])
                    self.store(item, future.result())
        except BrokenProcessPool:
            pass  # a worker died (out of memory?); finish in this process
        return list(left.values())

    def store(self, item, outcome) -> None:
        path, _, digest, cacheable = item
        kind, value = outcome
        if kind == "error":
            self.problem(path, value)
            return
        if self.cache is not None and cacheable:
            self.cache.put(path, digest, value)
        self.add_facts(path, value)

    def _tick(self, path: str) -> None:
        if path in self.context:
            return
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, path)

    def finish(self) -> list[FileReport]:
        """Join all facts into reports, add the problems, filter, sort."""
        from jaxmem.lint import engine

        reports: dict[str, FileReport] = {path: FileReport(path) for path in self.facts}
        if self.facts:
            in_order = [self.facts[path] for path in self.order if path in self.facts]
            for report in engine.report(in_order, self.settings):
                merged = reports.setdefault(report.path, FileReport(report.path))
                merged.findings.extend(report.findings)
                merged.refusals.extend(report.refusals)
        for path, finding in self.problems.items():
            reports.setdefault(path, FileReport(path)).findings.append(finding)
        for report in reports.values():
            noqa = self.noqa.get(report.path, {})
            report.findings = sorted(
                (f for f in report.findings if self._wanted(f) and not is_suppressed(f, noqa)),
                key=lambda f: f.sort_key,
            )
        return [reports[path] for path in sorted(reports) if path not in self.context]

    def _wanted(self, finding: Finding) -> bool:
        if is_internal_error(finding):
            return True
        return (
            self.settings.wants(finding.code)
            and finding.confidence.rank >= self.settings.min_confidence.rank
        )

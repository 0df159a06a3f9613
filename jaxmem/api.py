"""The ``jaxmem check`` pipeline as a function: paths in, one report per file out.

discovery -> bytes and digests -> the whole-run entry (:mod:`jaxmem.runcache`:
the same files, settings and paths as an earlier run return its reports) ->
decoded sources -> pre-filter summaries (:mod:`jaxmem.summaries`) -> facts
cache -> ``engine.facts_for_file`` (per file, in worker processes with
``jobs > 1``) -> ``engine.report`` (joins all files, so a call in one file
of a function jitted in another resolves) -> select / ignore /
min-confidence / ``# noqa`` -> sorted -> the cache pruned to its size cap.

The join is incremental: a file whose cache entry is the one the last run
of the same shape joined is not decoded unless the join must run again,
and it need not when every file's facts are those of that join (the
stored join, :mod:`jaxmem.runcache`); when it must, the calls' arguments
are decoded only for the calls that reach a jitted definition
(:mod:`jaxmem.factentry`).

A file that cannot be read or decoded gets a JXM900 finding; an exception
inside the engine on one file becomes a JXM900 "internal error" finding for
that file, and every other file is still checked.  The engine runs on a
large-stack thread (:mod:`jaxmem.deep`), so deeply nested valid code is
analysed; a worker process that dies is replaced, and a file that kills
its worker even alone is a JXM900 naming the signal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import os
import signal
from pathlib import Path
import traceback
from dataclasses import dataclass, field

from jaxmem.cache import FactsCache, StaleEntry, facts_digest
from jaxmem.config import load_config
from jaxmem.deep import call_deep, too_deep_message
from jaxmem.discovery import STDIN, PerFileIgnores, RealPaths, discover
from jaxmem.findings import FileReport, Finding
from jaxmem.nesting import nesting_error, python_syntax_error
from jaxmem.noqa import is_suppressed, parse_noqa
from jaxmem.notebooks import in_cells, refusal_in_cells
from jaxmem.runcache import RunCache, inputs_digest, joined_digest
from jaxmem.settings import Settings
from jaxmem.sources import PARSE_ERROR_CODE, decode_raw, parse_error_finding, read_raw

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
    callee_findings: bool = False,
) -> list[FileReport]:
    """Check ``paths`` and return one :class:`FileReport` per file, sorted by path.

    ``settings`` defaults to the ``[tool.jaxmem]`` configuration found from
    the first path (``config_file`` overrides the search).  ``jobs`` is the
    number of worker processes (0: one per CPU).  ``progress(done, total,
    path)`` is called as each file is analysed.  ``-`` reads stdin, reported
    as ``stdin_filename``.  With ``whole_project`` (the default) the other
    Python files of the project (the folder holding ``pyproject.toml`` or
    ``.git``) are analysed too, without being reported, so that a proposal
    made for a staged file accounts for every call site.  With ``callee_findings``,
    the findings in those other files that the requested files' calls give rise
    to (evidence in a requested file: ``step`` of ``train.py`` called from a
    notebook) are returned too, in reports of their own.  Raises :class:`jaxmem.config.ConfigError` and
    :class:`jaxmem.discovery.DiscoveryError` for bad input; any exception
    from ``engine.report`` propagates.
    """
    paths = [str(p) for p in paths] or ["."]
    config = load_config(paths, config_file)
    settings = settings if settings is not None else config.settings
    files, context = _discover(paths, config.root, settings, force_exclude, stdin_filename, whole_project)
    caches = _Caches(FactsCache(config.root, settings) if use_cache else None, whole_runs=STDIN not in files)
    run = _Run(settings, caches.facts, progress, total=len(files), context=set(context),
               per_file_ignores=PerFileIgnores(settings.per_file_ignores, config.root),
               callers=frozenset(stdin_filename if f == STDIN and stdin_filename else f for f in files)
               if callee_findings else frozenset())
    read = _read(files + context, settings, stdin_filename, stdin)
    reports = caches.stored_reports((os.getcwd(), paths, whole_project, force_exclude, settings, callee_findings),
                                    run, read)
    if reports is not None:
        return reports
    sources = _decode(run, read)
    del read  # the bytes of every file
    sources = _select_context(run, caches, sources)
    summary, hints = _summarize(caches, sources, settings)
    run.compute(_plan_facts(run, caches, sources, summary, hints), jobs, hints)
    caches.save_indexes(limit=2 * len(files + context) + 1000)  # room for this project and some edits
    reports = run.finish(caches.joined)
    caches.store_run(reports, run)
    return reports


def _discover(paths, root, settings: Settings, force_exclude: bool, stdin_filename: str | None,
              whole_project: bool) -> tuple[list[str], list[str]]:
    """The files to report on, and the project's other files (see :func:`context_files`)."""
    files = discover(paths, root=root, exclude=settings.exclude, include=settings.include,
                     force_exclude=force_exclude)
    context = context_files(paths, files, root, settings, stdin_filename) if whole_project else []
    return files, context


def _read(paths: list[str], settings: Settings, stdin_filename: str | None, stdin) -> list[tuple]:
    """``(path, raw)`` for each of ``paths``: its bytes and their digest, or why they could not be read."""
    return [(path, read_raw(path, stdin_filename=stdin_filename, stdin=stdin, max_bytes=settings.max_file_size))
            for path in paths]


def _decode(run: _Run, read: list[tuple]) -> list[tuple]:
    """``(path, source)`` for each file that decodes; the others become problems of ``run``."""
    sources = []
    for path, raw in read:
        source = decode_raw(raw)
        run.digests[source.path] = source.digest
        if source.notebook is not None:
            run.notebooks[source.path] = source.notebook
        if source.problem is not None:
            if path not in run.context:
                run.order.append(source.path)
                run.problem(source.path, source.problem)
        else:
            run.order.append(source.path)
            sources.append((path, source))
    return sources


def _select_context(run: _Run, caches: _Caches, sources: list[tuple]) -> list[tuple]:
    """``sources`` without the project's files that cannot matter to the requested ones.

    Of the project's other files, only those that import, call or pass what
    the requested files define, or that the requested files import, are kept.
    The methods of the others' classes that may keep an argument still count
    (``run.unseen_keeping``: an object of such a class may reach the requested
    files unnamed, see :mod:`jaxmem.lint.values.kept_if`).
    """
    if not run.context:
        return sources
    from jaxmem.lint import engine

    wanted = engine.context_selector({s.path: s.text for p, s in sources if p not in run.context},
                                     run.settings.own_packages)
    dropped = [(p, s) for p, s in sources if p in run.context and not wanted(s.path, s.text)]
    if dropped:
        summaries = caches.summaries(dropped, run.settings.own_packages)
        run.unseen_keeping = frozenset().union(*(summary.keeping for summary in summaries.values()))
    sources = [(p, s) for p, s in sources if p not in run.context or wanted(s.path, s.text)]
    kept = {s.path for _, s in sources}
    run.order = [p for p in run.order if p in kept or p not in run.context]
    return sources


def _summarize(caches: _Caches, sources: list[tuple], settings: Settings) -> tuple[dict, frozenset]:
    """The pre-filter's summary of each source by path, and the project's hints."""
    from jaxmem.lint.syntax.relevance import hints_of

    summary = caches.summaries(sources, settings.own_packages)
    # Names defined by files that mention jit: a file that never mentions
    # jit still matters when it calls one of them.
    hints = hints_of([summary[s.path] for _, s in sources], settings, [s.text for _, s in sources])
    return summary, hints


def _plan_facts(run: _Run, caches: _Caches, sources: list[tuple], summary: dict, hints: frozenset) -> list:
    """Give ``run`` the facts of each skipped, cached or deferred source; returns the others
    as ``(path, text, digest, cacheable)`` for :meth:`_Run.compute`."""
    from jaxmem.lint.syntax.relevance import summary_involves_jit, summary_reachable_hints

    run.digesting = caches.run is not None
    caches.open_file_lookups()
    pending = []
    for path, source in sources:
        run.texts[source.path] = source.text
        if not summary_involves_jit(summary[source.path], source.text, run.settings, hints):
            facts = caches.skipped_facts(source, summary[source.path], run.settings)
            run.add_facts(source.path, facts, _skipped_facts_digest(facts))
            continue
        # Which parts of a file are analysed depends on the names it can call
        # from other files' jitted functions, and whether its folder is a
        # package (its functions are then public): both belong in the cache key.
        digest = _facts_digest(source.digest, summary_reachable_hints(summary[source.path], hints),
                               run.in_package(source.path))
        cacheable = caches.facts is not None and path != STDIN
        if not (cacheable and caches.settle(run, source.path, digest)):
            pending.append((source.path, source.text, digest, cacheable))
    return pending


def context_files(paths, files: list[str], root, settings: Settings, stdin_filename: str | None = None) -> list[str]:
    """The project's other Python files: their calls decide the advice for ``files``.

    The files ``exclude`` leaves out are among them: they are not reported,
    but a call there still reads what a donation would delete (a test the
    configuration excludes).  Empty when no project root is marked (no
    ``pyproject.toml`` or ``.git`` above the paths) or when the run already
    covers the root folder and excludes nothing.
    """
    root = Path(root)
    if not ((root / "pyproject.toml").is_file() or (root / ".git").exists()):
        return []
    resolved_root = root.resolve()
    if not settings.exclude and any(p != STDIN and os.path.isdir(p) and Path(p).resolve() == resolved_root
                                    for p in paths):
        return []
    realpath = RealPaths()
    seen = {realpath(f) for f in files if f != STDIN}
    if stdin_filename:
        seen.add(os.path.realpath(stdin_filename))
    out = []
    relative_folders: dict[str, str] = {}
    for path in discover([str(root)], root=root, include=settings.include, realpath=realpath):
        if realpath(path) not in seen:
            # os.path.relpath(path), one folder at a time
            folder, name = os.path.split(path)
            if folder not in relative_folders:
                relative_folders[folder] = os.path.relpath(folder or os.curdir)
            relative = name if relative_folders[folder] == os.curdir else os.path.join(relative_folders[folder], name)
            out.append(path if relative.startswith("..") else relative)
    return out


def _facts_digest(content_digest: str, reachable_hints, in_package: bool) -> str:
    """The cache key of a file's facts: its contents, the other files' names
    it may call, and whether its folder is a package."""
    return content_digest + "|" + ",".join(sorted(reachable_hints)) + ("|package" if in_package else "")


def _skipped_facts_digest(facts) -> str:
    """The facts digest of a file the pre-filter skipped: such facts are a
    function of the path (which the join digest holds), the parse verdict, the
    private names and the methods that may keep an argument (see
    ``engine.skipped_facts``), so no encoding is needed."""
    names = " ".join(sorted(facts.private_names)) + "|" + " ".join(sorted(facts.keeping_methods))
    return f"skipped {facts.parse_error!r} {hashlib.sha256(names.encode()).hexdigest()[:32]}"


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


# Collections of young objects are rarer while analysing: parsing allocates
# millions of nodes that form no cycles, and with the facts of every file
# alive each full collection walks them all (a sixth of a one-job run over
# 427 jit-heavy files and their project).
_ANALYSIS_GC_THRESHOLD = (100_000, 50, 100)


@contextlib.contextmanager
def fewer_collections():
    """Run the block with :data:`_ANALYSIS_GC_THRESHOLD`; the previous thresholds come back after."""
    before = gc.get_threshold()
    gc.set_threshold(*_ANALYSIS_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _worker_setup() -> None:
    """Worker initializer: interrupts are the parent's, collections as in :func:`fewer_collections`."""
    ignore_interrupts()
    gc.set_threshold(*_ANALYSIS_GC_THRESHOLD)


def ignore_interrupts() -> None:
    """Worker initializer: Ctrl-C is the parent's to handle (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def isolated_facts_or_error(path: str, text: str, settings: Settings, hints=frozenset()):
    """:func:`facts_or_error` in a process of its own; a JXM900 finding naming
    the cause when that process dies."""
    import multiprocessing

    context = multiprocessing.get_context()
    receiver, sender = context.Pipe(duplex=False)
    worker = context.Process(target=_send_facts, args=(sender, path, text, settings, hints))
    worker.start()
    sender.close()
    try:
        outcome = receiver.recv()
    except EOFError:
        outcome = None
    finally:
        receiver.close()
        worker.join()
    if outcome is not None:
        return outcome
    return "error", parse_error_finding(path, worker_death_message(worker.exitcode))


def worker_death_message(exitcode: int | None) -> str:
    """Why a file has no analysis when the process analysing it died."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        cause = f"was killed by {name}" + (" (out of memory?)" if -exitcode == signal.SIGKILL else "")
    else:
        cause = f"exited with status {exitcode}"
    return (f"not analysed: the worker process analysing this file {cause}, also when "
            "retried alone; check it with --jobs 1 to see the error in the main process")


def _send_facts(sender, path, text, settings, hints) -> None:
    ignore_interrupts()
    sender.send(facts_or_error(path, text, settings, hints))
    sender.close()


def facts_or_error(path: str, text: str, settings: Settings, hints=frozenset()):
    """``("facts", facts)`` or ``("error", finding)``; runs in worker processes."""
    from jaxmem.lint import engine

    too_deep = nesting_error(text)
    if too_deep is not None:  # libcst would crash the process on it
        line, col, message = too_deep
        return "error", parse_error_finding(path, message, line, col)
    try:
        facts = call_deep(engine.facts_for_file, path, text, settings, hints)
    except RecursionError as error:
        return "error", parse_error_finding(path, too_deep_message(error))
    except Exception as error:  # a bug on one file must not stop the run
        return "error", internal_error_finding(path, error)
    return "facts", _with_python_error_position(facts, text)


def _with_python_error_position(facts, text: str):
    """``facts`` with a parse error placed where CPython places it.

    libcst reports tokenizer errors (a ``TabError``, an unterminated string)
    at 1:1; CPython names the line.  Files CPython accepts keep libcst's
    verdict (libcst may lag new syntax).
    """
    if facts.parse_error is None:
        return facts
    error = python_syntax_error(text)
    return facts if error is None else dataclasses.replace(facts, parse_error=error)


class _Caches:
    """The cache layers of one run, each looked up before computing and stored after.

    Each file's facts (:class:`FactsCache`, which :class:`_Run` also reads
    and writes), the pre-filter's indexes by content digest (summaries, the
    skipped files' syntax verdicts), and the whole run's reports and join
    (:class:`RunCache`, not for stdin).  Without a cache every look-up
    misses and nothing is stored.
    """

    def __init__(self, facts: FactsCache | None, whole_runs: bool):
        self.facts = facts
        self.run: RunCache | None = None
        self.whole_runs = facts is not None and whole_runs
        self.inputs: str | None = None  # the key of this run's reports in self.run
        self.joined_files: dict = {}  # path -> (cache key, facts digest) of each file in the stored join
        self.summary_index = None
        self.skipped: dict = {}  # content digest -> syntax verdict of files skipped in earlier runs
        self.skipped_now: dict = {}  # ... and in this run

    def stored_reports(self, shape: tuple, run: _Run, read: list[tuple]) -> list[FileReport] | None:
        """The reports of an earlier run of ``shape`` that read the same files; ``None`` on a miss."""
        if not self.whole_runs:
            return None
        # Everything the reports depend on, file by file (a decoding problem
        # is a function of the path and the bytes).
        records = [(raw.path, raw.digest, raw.problem, path in run.context, run.in_package(raw.path))
                   for path, raw in read]
        self.run = RunCache(self.facts, shape)
        self.inputs = inputs_digest(records)
        return self.run.get(self.inputs, {record[0] for record in records if not record[3]})

    def summaries(self, sources: list[tuple], own_packages=()) -> dict:
        """Each source's pre-filter summary by path: from the index, else computed."""
        from jaxmem.summaries import Summaries

        if self.summary_index is None:
            self.summary_index = Summaries(self.facts, own_packages)
        return {source.path: self.summary_index.summary(source.digest, source.text) for _, source in sources}

    def open_file_lookups(self) -> None:
        """Read what :meth:`skipped_facts` and :meth:`settle` look up: the stored join's files, the verdicts."""
        self.joined_files = self.run.facts_digests() if self.run is not None else {}
        self.skipped = self.facts.skipped_index() if self.facts is not None else {}

    def skipped_facts(self, source, summary, settings: Settings):
        """The facts of a file the pre-filter skips (``summary``: its ``TextSummary``), its
        syntax verdict from the index, else found now."""
        from jaxmem.lint import engine

        known = {"private": summary.private, "keeping": summary.keeping}
        if source.digest in self.skipped:
            facts = engine.skipped_facts(source.path, source.text, settings,
                                         parse_error=self.skipped[source.digest], **known)
        else:
            facts = engine.skipped_facts(source.path, source.text, settings, **known)
        self.skipped_now[source.digest] = facts.parse_error
        return facts

    def settle(self, run: _Run, path: str, digest: str) -> bool:
        """Give ``run`` the cached facts of ``path`` under ``digest`` (see :func:`_facts_digest`),
        deferred when unchanged since the stored join; whether there were any."""
        key = self.facts.key(path, digest)
        if self.joined_files.get(path, ("",))[0] == key[:32]:  # 128 bits of the sha256
            # Decoded only if the join must run again.
            run.defer(path, digest, key, self.joined_files[path][1])
            return True
        cached = self.facts.load(path, digest)
        if cached is None:
            return False
        run.entries[path] = (digest, key)
        run.add_facts(path, *cached)
        return True

    def save_indexes(self, limit: int) -> None:
        """Store the summaries and verdicts of this run, ``limit`` entries at most in each index."""
        if self.facts is not None:
            self.summary_index.save(limit)
            self.facts.save_skipped_index(self.skipped, self.skipped_now, limit)

    def joined(self, facts_digest: str) -> list[FileReport] | None:
        """The stored join of the facts with ``facts_digest`` (see :func:`joined_digest`); ``None`` on a miss."""
        return self.run.joined(facts_digest) if self.run is not None else None

    def store_run(self, reports: list[FileReport], run: _Run) -> None:
        """Store the run's reports and join (not when the engine failed on a file), then prune the cache."""
        if self.run is not None and not run.errors:
            self.run.put(self.inputs, reports, run.join)
        if self.facts is not None and self.facts.wrote:
            self.facts.prune()


@dataclass
class _Run:
    """The state of one check: facts gathered so far, problems, noqa comments."""

    settings: Settings
    cache: FactsCache | None
    progress: object
    total: int
    facts: dict = field(default_factory=dict)
    problems: dict = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # for their noqa comments
    order: list[str] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)
    done: int = 0
    context: set = field(default_factory=set)  # analysed for their calls, not reported
    callers: frozenset = frozenset()  # their calls' findings in context files are reported too
    errors: bool = False  # the engine failed on a file (not cached, retried next run)
    packages: dict[str, bool] = field(default_factory=dict)
    notebooks: dict = field(default_factory=dict)  # path -> Notebook: findings on its joined code go to cells
    per_file_ignores: PerFileIgnores | None = None
    digesting: bool = False  # keep each file's facts digest, for the stored join (jaxmem.runcache)
    facts_digests: dict[str, str | None] = field(default_factory=dict)
    deferred: dict[str, str] = field(default_factory=dict)  # path -> content digest: facts not decoded yet
    entries: dict[str, tuple] = field(default_factory=dict)  # path -> (content digest, cache key) of cached facts
    hints: frozenset = frozenset()
    join: tuple | None = None  # what to store of this run's join: see RunCache.put
    unseen_keeping: frozenset = frozenset()  # see _select_context

    def in_package(self, path: str) -> bool:
        """Whether the folder of ``path`` holds an ``__init__.py`` (the engine
        then counts its functions public)."""
        folder = os.path.dirname(path)
        if folder not in self.packages:
            self.packages[folder] = os.path.exists(os.path.join(os.path.abspath(folder or os.curdir), "__init__.py"))
        return self.packages[folder]

    def add_facts(self, path: str, facts, digest: str | None = None) -> None:
        self.facts[path] = facts
        if self.digesting:
            self.facts_digests[path] = digest if digest is not None else facts_digest(facts)
        self._tick(path)

    def defer(self, path: str, content_digest: str, key: str, digest: str) -> None:
        """``path``'s cache entry ``key`` holds facts with ``digest``, read only if the join runs."""
        self.deferred[path] = content_digest
        self.entries[path] = (content_digest, key)
        self.facts_digests[path] = digest
        self._tick(path)

    def problem(self, path: str, finding: Finding) -> None:
        self.problems[path] = finding
        self._tick(path)

    def compute(self, pending: list, jobs: int, hints: frozenset) -> None:
        """Run the engine on every ``(path, text, digest, cacheable)`` in ``pending`` (``hints``:
        see ``engine.facts_for_file``; kept for files analysed again at the join)."""
        self.hints = hints
        workers = (os.cpu_count() or 1) if jobs <= 0 else jobs
        workers = min(workers, len(pending))
        with fewer_collections():
            if workers <= 1:
                for item in pending:
                    self.store(item, facts_or_error(item[0], item[1], self.settings, hints))
            else:
                self._compute_in_workers(pending, workers, hints)

    def _compute_in_workers(self, pending: list, workers: int, hints: frozenset) -> None:
        left = self._compute_in_pool(pending, workers, hints)
        if left:
            # A worker died (killed, out of memory) and took the pool with it;
            # the files it had not finished get a pool of their own once more.
            left = self._compute_in_pool(left, workers, hints)
        for item in left:
            # Still failing: each file alone, so one that kills its worker is
            # named and the others are analysed.
            self.store(item, isolated_facts_or_error(item[0], item[1], self.settings, hints))

    def _compute_in_pool(self, pending: list, workers: int, hints: frozenset) -> list:
        """Analyse in worker processes; returns the items not analysed if a worker died."""
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from concurrent.futures.process import BrokenProcessPool

        left = {item[0]: item for item in pending}
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_setup)
        try:
            futures = {
                pool.submit(facts_or_error, path, text, self.settings, hints): path
                for path, text, _, _ in pending
            }
            for future in as_completed(futures):
                outcome = future.result()  # raises BrokenProcessPool when a worker died
                self.store(left.pop(futures[future]), outcome)
        except BrokenProcessPool:
            pass
        finally:
            # On Ctrl-C, do not wait for the queued files.
            pool.shutdown(wait=True, cancel_futures=True)
        return list(left.values())

    def store(self, item, outcome) -> None:
        path, _, digest, cacheable = item
        kind, value = outcome
        if kind == "error":
            self.errors = True
            self.problem(path, value)
            return
        stored = self.cache.put(path, digest, value) if self.cache is not None and cacheable else None
        if stored is not None:
            self.entries[path] = (digest, self.cache.key(path, digest))
        self.add_facts(path, value, stored)

    def _tick(self, path: str) -> None:
        if path in self.context:
            return
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, path)

    def finish(self, stored_join=None) -> list[FileReport]:
        """Join all facts into reports (``stored_join(facts digest)``: a stored
        join of the same facts, or ``None``), add the problems, filter, sort."""

        def report_of(path: str) -> FileReport:
            if path not in reports:
                reports[path] = FileReport(path, digest=self.digests.get(path))
            return reports[path]

        reports: dict[str, FileReport] = {}
        for path in (*self.facts, *self.deferred):
            report_of(path)
        for report in self._join(stored_join):
            merged = report_of(report.path)
            merged.findings.extend(report.findings)
            merged.refusals.extend(report.refusals)
        for path, finding in self.problems.items():
            report_of(path).findings.append(finding)
        for report in reports.values():
            if report.path in self.context:
                if not self.callers:
                    continue  # not returned
                report.findings = [f for f in report.findings if any(e.path in self.callers for e in f.evidence)]
                report.refusals = []
            noqa = parse_noqa(self.texts[report.path]) if report.findings and report.path in self.texts else {}
            ignored = self.per_file_ignores.codes(report.path) if self.per_file_ignores else ()
            kept = [f for f in report.findings
                    if self._wanted(f, ignored) and not is_suppressed(f, noqa)]
            if self.notebooks:
                kept = [in_cells(f, self.notebooks) for f in kept]
                report.refusals = [refusal_in_cells(r, self.notebooks) for r in report.refusals]
            report.findings = sorted(kept, key=lambda f: f.sort_key)
        return [reports[path] for path in sorted(reports)
                if path not in self.context or (self.callers and reports[path].findings)]

    def _join(self, stored_join) -> list[FileReport]:
        """``engine.report`` on every file's facts, in order, or the stored join of the same facts."""
        from jaxmem.lint import engine

        in_order = [path for path in self.order if path in self.facts or path in self.deferred]
        digests = self._join_digests(in_order)
        if self.digesting and all(digest is not None for _, digest in digests):
            key = joined_digest(digests)
            joined = stored_join(key) if stored_join is not None else None
            if joined is not None and {report.path for report in joined} <= set(in_order):
                for path in self.deferred:
                    self.cache.touch_entry(self.entries[path][1])
                self._remember_join(key, joined)
                return joined
        self._load_deferred()
        while True:
            in_order = [path for path in self.order if path in self.facts]
            try:
                joined = engine.report([self.facts[path] for path in in_order], self.settings,
                                       keeping_methods=self.unseen_keeping) if in_order else []
                break
            except StaleEntry as stale:
                # A cached file's arguments, read only now, were unusable: analyse it again, join again.
                self._analyse_again(stale.path)
        digests = self._join_digests(in_order)
        if self.digesting and all(digest is not None for _, digest in digests):
            self._remember_join(joined_digest(digests), joined)
        return joined

    def _join_digests(self, in_order: list[str]) -> list[tuple]:
        """What the join reads: each file's facts digest, in order, then the unseen files' keeping methods."""
        digests = [(path, self.facts_digests.get(path)) for path in in_order]
        if self.unseen_keeping:
            digests.append(("", " ".join(sorted(self.unseen_keeping))))
        return digests

    def _load_deferred(self) -> None:
        """Decode the deferred files' facts; one whose entry is gone (pruned by
        another run, corrupt) is analysed again."""
        deferred, self.deferred = self.deferred, {}
        for path, content_digest in deferred.items():
            loaded = self.cache.load(path, content_digest)
            if loaded is not None:
                self.facts[path], self.facts_digests[path] = loaded
            else:
                self._analyse_again(path)

    def _analyse_again(self, path: str) -> None:
        """Analyse ``path`` once more, its cache entry replaced (it was gone or unusable)."""
        self.facts.pop(path, None)
        self.done -= 1  # counted when its entry was found
        self.store((path, self.texts[path], self.entries[path][0], True),
                   facts_or_error(path, self.texts[path], self.settings, self.hints))

    def _remember_join(self, facts_key: str, joined: list[FileReport]) -> None:
        """Keep ``joined`` to store, with the cache key and facts digest of each cached file."""
        files = {path: [key[:32], self.facts_digests[path]] for path, (_, key) in self.entries.items()
                 if path in self.facts or path in self.deferred}
        self.join = (facts_key, files, joined)

    def _wanted(self, finding: Finding, ignored_here=()) -> bool:
        """Whether ``finding`` passes select/ignore, min-confidence and the
        ``ignored_here`` prefixes of its file's per-file-ignores."""
        if is_internal_error(finding):
            return True
        if finding.code == PARSE_ERROR_CODE:
            # A file that was not analysed is never hidden by --select: only an
            # explicit --ignore JXM900 (or JXM9, JXM90) silences it.
            return not any(PARSE_ERROR_CODE.startswith(p) and len(p) > len("JXM")
                           for p in (*self.settings.ignore, *ignored_here))
        return (
            self.settings.wants(finding.code)
            and not finding.code.startswith(tuple(ignored_here))
            and finding.confidence.rank >= self.settings.min_confidence.rank
        )

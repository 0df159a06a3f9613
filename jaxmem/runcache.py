"""A whole run's reports, reused while nothing the run read has changed.

A run's reports are a function of the code (version and code stamp), the
settings, the run's shape (working folder, paths named, options) and the
files it read: their paths, contents (digest) or read problem, and which
were only context.  The entry for a run shape (one JSON file per shape,
overwritten by each run) holds a digest of those inputs and the reports;
a run with the same inputs returns the stored reports without decoding
facts or joining them.

The entry also keeps the run's join (``engine.report``'s reports, before
select/ignore and ``# noqa``), under a digest of the joined facts (each
file's path and :func:`jaxmem.cache.facts_digest`, in order), with the
facts digest of each file's cache entry.  The join is a function of those
facts alone, so a run whose changed files kept their facts (a comment, a
docstring, a ``# noqa``, code the analysis blanks) reuses it: no other
file's facts are decoded.

Reading an entry back builds only jaxmem's report dataclasses
(:mod:`jaxmem.factcodec`), each field checked for its type; anything else
is a miss.
"""

from __future__ import annotations

import hashlib
import os

from jaxmem.cache import FactsCache
from jaxmem.factcodec import DecodeError, decode, encode
from jaxmem.findings import Confidence, DonationFix, Evidence, FileReport, Finding, Refusal, Severity, Span

RUN_FORMAT = "jaxmem-run-2"


class RunCache:
    """The stored reports of one run shape, and the join they came from."""

    def __init__(self, cache: FactsCache, shape: tuple):
        self.cache = cache
        self.name = cache.file_name("run", repr(shape), os.environ.get("JAXMEM_NO_SHORTCUTS", ""))
        self._entry: dict | None = None

    def _stored(self) -> dict:
        """The entry of this run shape, read once; ``{}`` when there is no usable one."""
        if self._entry is None:
            entry = self.cache.read_json(self.name)
            self._entry = entry if isinstance(entry, dict) and entry.get("format") == RUN_FORMAT else {}
        return self._entry

    def get(self, inputs: str, reported: set[str]) -> list[FileReport] | None:
        """The reports stored for ``inputs``, about files of ``reported`` only; ``None`` on a miss."""
        entry = self._stored()
        if not (entry.get("inputs") == inputs and _is_empty_list(entry.get("empty"))):
            return None
        reports = _decoded_reports(entry.get("reports"))
        if reports is None:
            return None
        reports.extend(FileReport(path, digest=digest) for path, digest in entry["empty"])
        paths = [r.path for r in reports]
        if len(set(paths)) != len(paths) or not reported.issuperset(paths):
            return None
        return sorted(reports, key=lambda report: report.path)

    def facts_digests(self) -> dict[str, tuple[str, str]]:
        """``path -> (cache key, facts digest)`` of the stored join's files."""
        stored = self._stored().get("facts")
        if not (type(stored) is dict and all(
                type(item) is list and len(item) == 2 and type(item[0]) is str and type(item[1]) is str
                for item in stored.values())):
            return {}
        return stored

    def joined(self, facts: str) -> list[FileReport] | None:
        """The join stored for the facts digest ``facts`` (see :func:`joined_digest`); ``None`` on a miss."""
        entry = self._stored()
        if entry.get("joined_facts") != facts:
            return None
        return _decoded_reports(entry.get("joined"))

    def put(self, inputs: str, reports: list[FileReport], join: tuple | None = None) -> None:
        """Store ``reports`` (sorted by path) as the result for ``inputs`` (best effort), and
        ``join``: ``(facts digest, {path: [cache key, facts digest]}, engine reports)`` or ``None``."""
        # Most files have nothing to report: a path and a digest say it all.
        empty = [[r.path, r.digest] for r in reports if not (r.findings or r.refusals)]
        try:
            value = {"format": RUN_FORMAT, "inputs": inputs, "empty": empty,
                     "reports": encode([r for r in reports if r.findings or r.refusals])}
            if join is not None:
                facts, files, joined = join
                value.update(joined_facts=facts, facts=files,
                             joined=encode([r for r in joined if r.findings or r.refusals]))
        except (TypeError, ValueError, RecursionError):
            return
        self.cache.write_json(self.name, value)


def joined_digest(files) -> str:
    """A digest of the ``(path, facts digest)`` pairs a join reads, in order."""
    return hashlib.sha256(repr(list(files)).encode("utf-8", "surrogateescape")).hexdigest()


def _decoded_reports(data) -> list[FileReport] | None:
    """The reports :func:`encode` turned into ``data``, each checked field by field; ``None`` otherwise."""
    try:
        reports = decode(data)
    except (DecodeError, RecursionError):
        return None
    if not (type(reports) is list and all(_is_report(r) for r in reports)):
        return None
    return reports


def inputs_digest(records) -> str:
    """A digest of the run's ``(path, digest, problem, is_context)`` records, in order."""
    return hashlib.sha256(repr(list(records)).encode("utf-8", "surrogateescape")).hexdigest()


def _is_empty_list(value) -> bool:
    return type(value) is list and all(
        type(item) is list and len(item) == 2 and type(item[0]) is str and _optional(item[1], str)
        for item in value)


def _optional(value, kind) -> bool:
    return value is None or type(value) is kind


def _is_span(span) -> bool:
    return type(span) is Span and all(type(v) is int for v in (span.line, span.col, span.end_line, span.end_col))


def _is_evidence(item) -> bool:
    return (type(item) is Evidence and type(item.message) is str and type(item.path) is str and type(item.line) is int
            and _optional(item.cell, int))


def _is_fix(fix) -> bool:
    return fix is None or (type(fix) is DonationFix and type(fix.definition_line) is int
                           and _optional(fix.index, int) and _optional(fix.name, str) and _optional(fix.mode, str))


def _is_finding(f) -> bool:
    return (type(f) is Finding and type(f.code) is str and type(f.path) is str and _is_span(f.span)
            and type(f.message) is str and type(f.severity) is Severity and type(f.confidence) is Confidence
            and all(_optional(v, str) for v in (f.function, f.wrapped, f.definition_path, f.parameter_name))
            and all(_optional(v, int) for v in (f.definition_line, f.parameter_index, f.cell, f.definition_cell))
            and type(f.evidence) is tuple and all(_is_evidence(e) for e in f.evidence) and _is_fix(f.fix))


def _is_refusal(r) -> bool:
    return (type(r) is Refusal and type(r.line) is int and _optional(r.cell, int)
            and all(type(v) is str for v in (r.path, r.function, r.parameter, r.reason)))


def _is_report(report) -> bool:
    return (type(report) is FileReport and type(report.path) is str and _optional(report.digest, str)
            and type(report.findings) is list and all(_is_finding(f) for f in report.findings)
            and type(report.refusals) is list and all(_is_refusal(r) for r in report.refusals))

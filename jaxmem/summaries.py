"""The pre-filter's view of each file, kept by content digest.

What the textual pre-filter needs of a file (does its code mention jit,
which names does it add to the project's hints, which names can it call,
which functions of other modules can its analysis read:
:class:`jaxmem.lint.syntax.relevance.TextSummary`) depends on its text alone.  A
run reads the summaries of unchanged files from one index in the cache
folder, so the regular expressions run only on new contents.
"""

from __future__ import annotations

from jaxmem.cache import SUMMARIES_FORMAT, FactsCache
from jaxmem.lint.syntax.relevance import TextSummary, summarize


class Summaries:
    """``summary(digest, text)``, from the index when the digest is in it."""

    def __init__(self, cache: FactsCache | None, own_packages=()):
        self.cache = cache  # its namespace includes the settings, own_packages with them
        self.own_packages = own_packages
        self.stored = cache.load_index(_index_name(cache), SUMMARIES_FORMAT, _is_entry) if cache else {}
        self.seen: dict[str, list] = {}

    def summary(self, digest: str, text: str) -> TextSummary:
        """The summary of ``text``, whose content digest is ``digest``."""
        entry = self.stored.get(digest)
        if entry is None:
            summary = summarize(text, self.own_packages)
            entry = _encode(summary)
            if _decode(entry) == summary:  # always, as names are \w+ words
                self.seen[digest] = entry
            return summary
        self.seen[digest] = entry
        return _decode(entry)

    def save(self, limit: int) -> None:
        """Keep the summaries computed in this run (best effort)."""
        if self.cache is not None:
            self.cache.save_index(_index_name(self.cache), SUMMARIES_FORMAT, self.stored, self.seen, limit)


def _index_name(cache: FactsCache) -> str:
    return cache.file_name("summaries")


def _encode(summary: TextSummary) -> list:
    names = (summary.jitted, summary.callable, summary.reads, summary.private, summary.defines, summary.keeping)
    return [summary.mentions_jit, *(" ".join(sorted(each)) for each in names)]


def _decode(entry: list) -> TextSummary:
    mentions_jit, jitted, callable_names, reads, private, defines, keeping = entry
    return TextSummary(mentions_jit, _names(jitted), _names(callable_names), _names(reads), _names(private),
                       _names(defines), _names(keeping))


def _names(joined: str) -> frozenset[str]:
    return frozenset(joined.split(" ")) if joined else frozenset()


def _is_entry(entry) -> bool:
    return (type(entry) is list and len(entry) == 7 and type(entry[0]) is bool
            and all(type(names) is str for names in entry[1:]))

"""A facts cache entry: the calls' arguments kept apart, decoded when first read.

Most of a file's facts are its calls' arguments (what happens to each
argument after the call), and the join reads them only for the calls that
reach a jitted definition, a few in a hundred.  An entry is two JSON
documents, one per line:

    {"format": ..., "key": ..., "digest": ..., "facts": FACTS, "calls": STUBS}
    [[POSITIONAL, KEYWORDS], ...]

``FACTS`` is the file's facts with no calls, each stub every field of a
call but its arguments, and the second line the arguments of each call
(all :mod:`jaxmem.factcodec` encodings).  Reading an entry parses the
first line; each call is a :class:`LazyCall`, which parses the second line
(once per file) when its arguments are first read.  An entry whose second
line turns out unusable raises :class:`StaleEntry` at that moment, so the
caller analyses the file again instead of trusting it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from jaxmem.cache import StaleEntry
from jaxmem.factcodec import DecodeError, decode, encode
from jaxmem.lint.join.facts import CallFacts, FileFacts

ARGUMENT_FIELDS = ("positional", "keywords")
_CALL_FIELDS = tuple(f.name for f in dataclasses.fields(CallFacts))
STUB_FIELDS = tuple(name for name in _CALL_FIELDS if name not in ARGUMENT_FIELDS)


def encoded(facts: FileFacts) -> tuple[bytes, bytes, bytes]:
    """``(facts without calls, stubs, arguments)`` as JSON; raises ``TypeError``
    (or ``ValueError``) when ``facts`` are not plain data."""
    light = dataclasses.replace(facts, calls=[])
    stubs = [[encode(getattr(call, name)) for name in STUB_FIELDS] for call in facts.calls]
    arguments = [[encode(call.positional), encode(call.keywords)] for call in facts.calls]
    return _json(encode(light)), _json(stubs), _json(arguments)


def digest_of(parts: tuple[bytes, bytes, bytes]) -> str:
    """The digest of facts from their :func:`encoded` parts: equal digests, equal facts."""
    return hashlib.sha256(b"\n".join(parts)).hexdigest()[:32]


def decoded(path: str, light, stubs, arguments: bytes) -> FileFacts:
    """The facts of ``path`` from an entry's ``facts`` and ``calls`` values and its
    second line; raises :class:`jaxmem.factcodec.DecodeError` for what is not an
    encoding of them (``arguments`` is checked only when first read)."""
    facts = decode(light)
    if not (isinstance(facts, FileFacts) and facts.path == path and facts.calls == []
            and type(stubs) is list):
        raise DecodeError("not the facts of this file")
    calls = _Arguments(path, arguments, len(stubs))
    facts.calls = [_lazy_call(decode(stub), calls, index) for index, stub in enumerate(stubs)]
    return facts


def materialized(facts: FileFacts) -> FileFacts:
    """``facts`` with every call's arguments read; raises :class:`StaleEntry`."""
    for call in facts.calls:
        call.positional  # noqa: B018 (reads it)
    return facts


class LazyCall(CallFacts):
    """A :class:`jaxmem.lint.join.facts.CallFacts` whose ``positional`` and ``keywords``
    are decoded from the entry when first read; equal to the call it stands for."""

    def __getattr__(self, name: str):
        # Called only for attributes not set yet: the arguments, before their first read.
        state = self.__dict__
        if name in ARGUMENT_FIELDS and "_arguments" in state:
            state["positional"], state["keywords"] = state["_arguments"].of(state["_index"])
            return state[name]
        raise AttributeError(name)

    def __eq__(self, other):
        if not isinstance(other, CallFacts):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _CALL_FIELDS)

    __hash__ = CallFacts.__hash__

    def __reduce__(self):
        return CallFacts, tuple(getattr(self, name) for name in _CALL_FIELDS)


def _lazy_call(stub, arguments: _Arguments, index: int) -> LazyCall:
    if type(stub) is not tuple or len(stub) != len(STUB_FIELDS):
        raise DecodeError("a call stub of the wrong length")
    call = object.__new__(LazyCall)
    # What a frozen dataclass's __init__ does, field by field, in one update.
    call.__dict__.update(zip(STUB_FIELDS, stub), _arguments=arguments, _index=index)
    return call


class _Arguments:
    """The second line of one entry: every call's arguments, parsed on first use."""

    def __init__(self, path: str, data: bytes, count: int):
        self.path = path
        self.data = data
        self.count = count
        self.rows: list | None = None

    def of(self, index: int) -> tuple[tuple, tuple]:
        """``(positional, keywords)`` of call ``index``; raises :class:`StaleEntry`."""
        try:
            if self.rows is None:
                rows = json.loads(self.data)
                if type(rows) is not list or len(rows) != self.count:
                    raise DecodeError("not one row of arguments per call")
                self.rows = rows
            positional, keywords = decode(self.rows[index])
        except (ValueError, TypeError, DecodeError, RecursionError):  # ValueError: JSON, unpacking
            raise StaleEntry(self.path) from None
        if type(positional) is not tuple or type(keywords) is not tuple:
            raise StaleEntry(self.path)
        return positional, keywords


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")

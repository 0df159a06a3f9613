"""Source positions of libcst nodes, computed cheaply.

libcst's PositionProvider tracks line and column on every token during a
codegen pass, which costs about ten times the codegen itself.  We record
only token indices per node during the same pass, and turn an index into
``(line, column)`` on demand from one prefix table.  The positions are the
syntactic ones PositionProvider gives (a test compares them).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import threading
from dataclasses import dataclass

import libcst as cst
from libcst._nodes.expression import _BaseParenthesizedNode
from libcst._nodes.internal import CodegenState


@dataclass(frozen=True)
class Location:
    line: int
    column: int


@dataclass(frozen=True)
class Range:
    start: Location
    end: Location


# Whitespace nodes are nearly half of a tree's nodes and nobody asks
# where they are: skip recording them.
_UNTRACKED = frozenset(
    {cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.Newline, cst.TrailingWhitespace, cst.EmptyLine}
)


class _IndexState(CodegenState):
    """A codegen state that remembers, per node, the token indices it spans."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.spans: dict[int, tuple[int, int]] = {}
        self.code_spans: dict[int, tuple[int, int]] = {}
        self._stack: list[int] = []
        self.popped = ""

    def pop_trailing_newline(self) -> None:
        # PositionProvider's module range still ends after this newline.
        if self.tokens:
            self.popped = self.tokens.pop()

    def before_codegen(self, node) -> None:
        self._stack.append(len(self.tokens))

    def after_codegen(self, node) -> None:
        start = self._stack.pop()
        if type(node) not in _UNTRACKED:
            key = id(node)
            span = (start, len(self.tokens))
            if key not in self.spans:
                self.spans[key] = span
            self.code_spans[key] = span

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        # An expression without parentheses generates exactly its syntactic
        # span: after_codegen records it.  Most nodes are such expressions.
        if start_node is None and end_node is None and not getattr(node, "lpar", True) \
                and not hasattr(node, "comma"):  # an element's code ends with its comma
            return _NOTHING_TO_RECORD
        # A small class, not a @contextmanager generator: libcst enters this
        # for most nodes, and the generator protocol cost 4% of a check.
        return _SyntacticSpan(self, node, start_node, end_node)


class _NothingToRecord:
    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc, traceback) -> bool:
        return False


_NOTHING_TO_RECORD = _NothingToRecord()


class _Parenthesized:
    """libcst's ``_parenthesize`` as a small class instead of a generator."""

    __slots__ = ("node", "state", "span")

    def __init__(self, node, state) -> None:
        self.node, self.state = node, state

    def __enter__(self) -> None:
        for lpar in self.node.lpar:
            lpar._codegen(self.state)
        self.span = self.state.record_syntactic_position(self.node)
        self.span.__enter__()

    def __exit__(self, exc_type, exc, traceback) -> bool:
        self.span.__exit__(exc_type, exc, traceback)
        if exc_type is None:
            for rpar in self.node.rpar:
                rpar._codegen(self.state)
        return False


def _parenthesize(self, state):
    if not self.lpar and not self.rpar:
        return state.record_syntactic_position(self)
    return _Parenthesized(self, state)


def _only_parenthesizes(function) -> bool:
    """Whether ``function`` is libcst's ``_parenthesize`` as this module copies it."""
    code = getattr(getattr(function, "__wrapped__", None), "__code__", None)
    return code is not None and code.co_names == ("lpar", "_codegen", "record_syntactic_position", "rpar")


# Replaced only while it does what it did when this was written: every
# expression enters it, and the @contextmanager protocol was a tenth of the pass.
_ORIGINAL_PARENTHESIZE = _BaseParenthesizedNode.__dict__.get("_parenthesize")
_REPLACEABLE = _only_parenthesizes(_ORIGINAL_PARENTHESIZE)
_patch_lock = threading.Lock()


@contextlib.contextmanager
def _parentheses_without_generators():
    """libcst's code generation with :func:`_parenthesize` in place of its generator."""
    if not _REPLACEABLE:
        yield
        return
    with _patch_lock:
        _BaseParenthesizedNode._parenthesize = _parenthesize
        try:
            yield
        finally:
            _BaseParenthesizedNode._parenthesize = _ORIGINAL_PARENTHESIZE


class _SyntacticSpan:
    """Records ``node``'s token span when its codegen finishes."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _IndexState, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = len(self.state.tokens)

    def __exit__(self, exc_type, exc, traceback) -> bool:
        # Nothing is recorded when codegen fails (RecursionError, Ctrl-C): the
        # start and end nodes were never recorded, and looking them up would
        # replace the real error with a KeyError.
        if exc_type is not None:
            return False
        spans = self.state.spans
        start = self.start if self.start_node is None else spans[id(self.start_node)][0]
        end = len(self.state.tokens) if self.end_node is None else spans[id(self.end_node)][1]
        spans[id(self.node)] = (start, end)
        return False


class Positions:
    """``positions[node]`` -> Range, for every node of one module."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module  # keeps the nodes (and their ids) alive
        self._spans: dict[int, tuple[int, int]] | None = None
        self._code_spans: dict[int, tuple[int, int]] = {}
        self._tokens: list[str] = []
        self._newline_at: list[int] | None = None
        self._popped = ""  # the final newline of a module without one, which codegen drops

    def _index(self) -> dict[int, tuple[int, int]]:
        # Built on first use: many files parsed turn out to need no position.
        if self._spans is None:
            state = _IndexState(self._module)
            with _parentheses_without_generators():
                self._module._codegen(state)
            self._spans, self._tokens, self._code_spans = state.spans, state.tokens, state.code_spans
            self._popped = state.popped
        return self._spans

    def _table(self):
        # Character offset of every token start, and offsets of line starts.
        if self._newline_at is None:
            offsets = list(itertools.accumulate(map(len, self._tokens), initial=0))
            text = "".join(self._tokens) + self._popped
            text = text.replace("\r\n", " \n").replace("\r", "\n")
            line_starts = [0]
            index = text.find("\n")
            while index != -1:
                line_starts.append(index + 1)
                index = text.find("\n", index + 1)
            self._offsets = offsets
            self._newline_at = line_starts
        return self._offsets, self._newline_at

    def _location(self, token_index: int) -> Location:
        offsets, line_starts = self._table()
        offset = offsets[min(token_index, len(offsets) - 1)]
        line = bisect.bisect_right(line_starts, offset)
        return Location(line, offset - line_starts[line - 1])

    def __getitem__(self, node: cst.CSTNode) -> Range:
        start, end = self._index()[id(node)]
        if node is self._module and self._popped:
            offsets, line_starts = self._table()
            offset = offsets[-1] + len(self._popped)
            line = bisect.bisect_right(line_starts, offset)
            return Range(self._location(start), Location(line, offset - line_starts[line - 1]))
        return Range(self._location(start), self._location(end))

    def __contains__(self, node: cst.CSTNode) -> bool:
        return id(node) in self._index()

    def code(self, node: cst.CSTNode) -> str:
        """The code generated for ``node``: ``module.code_for_node(node)``, except
        that continuation lines keep the indentation they have in the module."""
        self._index()
        span = self._code_spans.get(id(node))
        if span is None:
            return self._module.code_for_node(node)
        return "".join(self._tokens[span[0]:span[1]])

    def code_offsets(self, node: cst.CSTNode) -> tuple[int, int]:
        """Where ``node`` lies in the module's code, in characters, everything its code
        generation writes included (a statement's leading blank lines and comments too)."""
        self._index()
        start, end = self._code_spans[id(node)]
        offsets, _ = self._table()
        # A module without a final newline drops the last token after its statements.
        last = len(offsets) - 1
        return offsets[min(start, last)], offsets[min(end, last)]

"""libcst's parser, without the per-node validation it runs while building the tree.

libcst validates every node it constructs (``CSTNode.__post_init__`` calls
``_validate``), also when the parser builds a tree from source it has just
accepted; that is a sixth of a parse (libcst's own comment there says the
work belongs elsewhere).  The analysis only reads the trees it parses, so
the check is switched off for the parse.  It is switched off only when
``__post_init__`` does nothing but validate, so a libcst that gives it
another job keeps it.
"""

from __future__ import annotations

import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_lock = threading.Lock()


def _only_validates(function) -> bool:
    code = getattr(function, "__code__", None)
    return code is not None and code.co_names == ("_validate",)


_POST_INIT = CSTNode.__dict__.get("__post_init__")
_SKIPPABLE = _POST_INIT is not None and _only_validates(_POST_INIT)


def _no_validation(self) -> None:
    pass


def parse_module(text: str, config: cst.PartialParserConfig | None = None) -> cst.Module:
    """``libcst.parse_module(text, config)``, validation of the parsed nodes skipped."""
    if not _SKIPPABLE:
        return cst.parse_module(text) if config is None else cst.parse_module(text, config)
    with _lock:
        CSTNode.__post_init__ = _no_validation
        try:
            return cst.parse_module(text) if config is None else cst.parse_module(text, config)
        finally:
            CSTNode.__post_init__ = _POST_INIT

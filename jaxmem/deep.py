"""Run a function on a thread with a large stack, so deeply nested valid code is analysed.

libcst's parser, code generation and transformers recurse once per level
of nesting: about 500 ``elif`` branches or a long chain of ``+`` exceed
Python's default recursion limit (1,000 frames) on the main thread's 8 MiB
stack.  :func:`call_deep` runs the work on a thread whose stack is large
enough for a much higher limit; code deeper than even that still raises
``RecursionError``, which callers report with its real cause.
"""

from __future__ import annotations

import os
import sys
import threading

STACK_BYTES = 512 * 1024 * 1024  # address space; only the pages used cost memory
RECURSION_LIMIT = 60_000
TOO_DEEP = "too deeply nested for jaxmem's analysis"
THREAD_NAME = "jaxmem-deep"

_state = threading.local()
_limit_lock = threading.Lock()


def call_deep(function, *args, **kwargs):
    """``function(*args, **kwargs)`` on a large-stack thread; returns or raises what it does.

    Calls made from inside such a thread run directly.  The recursion limit
    is raised only while the thread runs and restored afterwards.
    """
    if getattr(_state, "deep", False):
        return function(*args, **kwargs)
    outcome: dict = {}

    def target() -> None:
        _state.deep = True
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as error:  # handed to the caller's thread below
            outcome["error"] = error

    with _limit_lock:
        thread = threading.Thread(target=target, name=THREAD_NAME, daemon=True)
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
        try:
            previous_stack = threading.stack_size(STACK_BYTES)  # read when the thread starts
            try:
                thread.start()
            finally:
                threading.stack_size(previous_stack)
            thread.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    if "error" in outcome:
        error = outcome.pop("error")
        try:
            raise error
        finally:
            del error
    return outcome.get("value")


def exit_if_abandoned(status: int) -> None:
    """Exit the process now with ``status`` when a large-stack thread is still running.

    After Ctrl-C the main thread stops waiting, but the analysis thread
    cannot be stopped; letting the interpreter shut down around it aborts
    the process (SIGABRT).  Nothing is lost: files are only written from
    the main thread, each one atomically.
    """
    if any(thread.name == THREAD_NAME and thread.is_alive() for thread in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def too_deep_message(error: RecursionError) -> str:
    """The user-facing reason for a ``RecursionError`` raised by the analysis."""
    return (f"{TOO_DEEP}: {error}; split the deepest expression or `elif` chain "
            "(the file was not analysed)")

"""Reasons that hold only if a callee of another file, or some class's method, keeps its argument.

A call whose result is used (``n = tracker.track(w)``, ``if register(w):``) is taken to
be made for that result, unless its callee may keep an argument after it returns
(``self.seen.append(value)``).  For a method, which class ``tracker`` is an instance
of is not known, so any class of the project with a method of that name that may keep
an argument counts; for a function of another file, that function's summary decides.
Either may be defined in another file, which one file's facts cannot see.  So a file's
facts mark such a reason with what it depends on (:func:`mark_kept_if`), and the join, which has every file's classes and
summaries, keeps the reason when that callee may keep an argument and drops it
otherwise (:func:`settled`).  The marks are control characters no reason's text
holds; a reason phrased around a marked one (``"`w`, which `tracker.track(w)` may
keep"``) carries its mark and is settled with it.
"""

from __future__ import annotations

import re
from typing import Callable

_MARK = re.compile("\x1e([^\x1e\x1f]*)\x1f")
FUNCTION = "function:"  # a condition on a function of another file, by its import-resolved name


def mark_kept_if(reason: str, condition: str) -> str:
    """``reason``, true only if ``condition`` holds: a method of that name of some class of
    the project may keep an argument, or, for :data:`FUNCTION` and a function's
    import-resolved name (``function:registry.register``), that function may."""
    return f"{reason}\x1e{condition}\x1f"


def is_marked(reason: str) -> bool:
    """Whether ``reason`` holds only if some callee keeps its argument (see :func:`settled`)."""
    return "\x1e" in reason


def settled(reason: str, keeps: Callable[[str], bool]) -> str | None:
    """``reason`` without its marks when ``keeps`` says yes to every condition it depends on
    (a method's name, or :data:`FUNCTION` and a function's name); None when it says no to
    one, so the reason does not hold."""
    if "\x1e" not in reason:
        return reason
    if not all(keeps(condition) for condition in _MARK.findall(reason)):
        return None
    return _MARK.sub("", reason)

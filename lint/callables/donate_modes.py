"""equinox's ``filter_jit(donate=...)``: one mode donates a whole set of parameters.

Checked on equinox 0.13.8 (``equinox/_jit.py``): ``donate="all"`` donates
every array of every argument (keyword arguments and defaults too, and the
arrays of the wrapped callable itself); ``"all-except-first"`` all but the
first argument's; ``"warn"``/``"warn-except-first"`` the same without
silencing "Some donated buffers were not usable"; ``"none"`` (the default)
nothing.  Non-array leaves are static and never donated.  There is no
per-argument donation: ``filter_jit(donate_argnums=...)`` raises
``ValueError``.  So a proposal is a mode, and it is safe only when every
parameter the mode covers may be donated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

ALL = "all"
ALL_EXCEPT_FIRST = "all-except-first"


@dataclass(frozen=True)
class ParamState:
    """One parameter of an equinox-jitted function, as the analysis sees it."""

    name: str
    donated: bool = False  # the current mode donates it already
    wanted: bool = False  # dead at every call, and an output can take its buffers
    blocker: str | None = None  # why it must not be donated; None when it may be


def covered(mode: str, params: Sequence[ParamState]) -> Sequence[ParamState]:
    """The parameters ``mode`` donates."""
    return params[1:] if mode == ALL_EXCEPT_FIRST else params


def choose_mode(params: Sequence[ParamState]) -> str | None:
    """The mode that donates the most wanted parameters and none with a blocker
    (the smaller mode on a tie), or None when no mode adds a wanted one."""
    best, best_gain = None, 0
    for mode in (ALL_EXCEPT_FIRST, ALL):
        donated = covered(mode, params)
        if any(p.blocker is not None and not p.donated for p in donated):
            continue
        gain = sum(p.wanted and not p.donated for p in donated)
        if gain > best_gain:
            best, best_gain = mode, gain
    return best


def first_blocker(params: Sequence[ParamState], wanted: ParamState) -> ParamState | None:
    """A parameter that keeps every mode covering ``wanted`` from being safe."""
    for mode in (ALL_EXCEPT_FIRST, ALL):
        donated = covered(mode, params)
        if wanted in donated:
            return next((p for p in donated if p.blocker is not None and not p.donated), None)
    return None

"""Copy instructions of a compiled HLO module: where donation makes XLA copy buffers.

When an output reuses a donated input but the program still reads the
input's old value after that output is written (a swap, a roll, an update
that reads the old weights late), XLA keeps the value alive by copying it
first.  Those copies are XLA temporaries, so they eat into the saving:
comparing the ``copy`` instructions of the module compiled with donation
against the one compiled without says which values were copied and how big
they are.  Pure text parsing of ``Compiled.as_text()``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

_COPY = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\w+)\[([\d,]*)\](?:\{[^}]*\})?\s+copy\(%?([\w.\-]+)\)",
                   re.MULTILINE)
_ENTRY = re.compile(r"^ENTRY\s+%?[\w.\-]+\s*\((.*)\)\s*->", re.MULTILINE)
_ELEMENT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                  "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


@dataclass(frozen=True)
class Copy:
    """One ``copy`` instruction: what it copies and how many bytes it writes."""

    operand: str
    type_text: str
    nbytes: int


def parse_copies(hlo_text: str) -> list[Copy]:
    """Every ``copy`` instruction of every computation in the module."""
    copies = []
    for _name, element, dims, operand in _COPY.findall(hlo_text):
        shape = [int(d) for d in dims.split(",") if d]
        copies.append(Copy(operand, f"{element}[{dims}]", math.prod(shape) * _ELEMENT_BYTES.get(element, 4)))
    return copies


def entry_parameter_names(hlo_text: str) -> list[str]:
    """The entry computation's parameter names, in parameter-number order."""
    match = _ENTRY.search(hlo_text)
    if match is None:
        return []
    return [name for name in re.findall(r"([\w.\-]+):", match.group(1))]


def extra_copies(with_donation: str, without_donation: str) -> list[Copy]:
    """Copies the module compiled with donation makes beyond those of the one without."""
    baseline = Counter((copy.operand, copy.type_text) for copy in parse_copies(without_donation))
    by_type = Counter(copy.type_text for copy in parse_copies(without_donation))
    extra = []
    for copy in parse_copies(with_donation):
        if baseline[(copy.operand, copy.type_text)] > 0:
            baseline[(copy.operand, copy.type_text)] -= 1
            by_type[copy.type_text] -= 1
        elif by_type[copy.type_text] > 0 and not _is_parameter_copy(copy, with_donation):
            by_type[copy.type_text] -= 1  # the same copy under another instruction name
        else:
            extra.append(copy)
    return extra


def _is_parameter_copy(copy: Copy, hlo_text: str) -> bool:
    return copy.operand in entry_parameter_names(hlo_text)

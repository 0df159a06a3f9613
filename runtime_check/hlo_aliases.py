"""Read the donation facts out of a compiled HLO module's text.

What jax 0.10.2 gives us (explored on the CPU backend):

* ``Compiled.as_text()`` starts with the module header, e.g.
  ``HloModule jit_f, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias),
  {2}: (2, {}, may-alias) }, buffer_donor={ (1, {}) }, entry_computation_layout=...``.
  ``{0}`` is the output's tuple index (``{}`` when the result is a single
  array), ``(0, {}, ...)`` the parameter number and its tuple index (non-empty
  only when jax passes arguments as one tuple, ``tuple_args``).
* ``input_output_alias`` is XLA's final decision.  ``buffer_donor`` lists the
  parameters jax handed to XLA without an alias because no output had the same
  shape and dtype but one had the same element count; if XLA could not use
  such a buffer (different byte size, e.g. bf16 in and f32 out) it stays a
  donor and nothing is reused.  jax warns about neither case.
* Parameter numbers count only the arguments jax kept: unused arguments are
  pruned (``keep_unused=False``), see :mod:`jaxmem.runtime_check.leaves`.

This module is pure text parsing so it can be tested without compiling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Alias:
    """One ``input_output_alias`` entry: output ``output_index`` reuses a parameter."""

    output_index: tuple[int, ...]
    parameter: int
    parameter_index: tuple[int, ...]
    kind: str


@dataclass(frozen=True)
class ModuleDonations:
    """The aliases and unaliased donors of one compiled module."""

    module_name: str
    aliases: tuple[Alias, ...]
    donors: tuple[tuple[int, tuple[int, ...]], ...]

    def aliased_parameter(self, parameter: int, index: tuple[int, ...] = ()) -> Alias | None:
        """The alias that reuses ``parameter`` (at tuple ``index``), if any."""
        for alias in self.aliases:
            if alias.parameter == parameter and alias.parameter_index == index:
                return alias
        return None

    def is_donor(self, parameter: int, index: tuple[int, ...] = ()) -> bool:
        """Whether ``parameter`` was handed to XLA as a buffer donor without an alias."""
        return (parameter, index) in self.donors


_HEADER = re.compile(r"^HloModule\s+([^\s,]+)", re.MULTILINE)
_ALIAS_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}\s*(?:,\s*([\w-]+))?\s*\)")
_DONOR_ENTRY = re.compile(r"\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}\s*\)")


def _index(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.replace(" ", "").split(",") if part)


def _braced_value(header: str, key: str) -> str | None:
    """The text between the braces of ``key={...}`` in the header, nesting-aware."""
    start = header.find(key + "={")
    if start < 0:
        return None
    depth = 0
    begin = start + len(key) + 1
    for position in range(begin, len(header)):
        char = header[position]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return header[begin + 1:position]
    raise ValueError(f"unbalanced braces after {key}= in HLO module header")


def parse_module_donations(hlo_text: str) -> ModuleDonations:
    """Parse the header line of ``Compiled.as_text()`` into aliases and donors."""
    match = _HEADER.search(hlo_text)
    if match is None:
        raise ValueError("not an HLO module: no 'HloModule' header line")
    header = hlo_text[match.start():].split("\n", 1)[0]
    alias_text = _braced_value(header, "input_output_alias") or ""
    donor_text = _braced_value(header, "buffer_donor") or ""
    aliases = tuple(
        Alias(_index(out), int(param), _index(param_index), kind or "may-alias")
        for out, param, param_index, kind in _ALIAS_ENTRY.findall(alias_text)
    )
    donors = tuple((int(param), _index(index)) for param, index in _DONOR_ENTRY.findall(donor_text))
    return ModuleDonations(match.group(1), aliases, donors)

"""Human-readable byte counts."""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_bytes(count: int | float | None) -> str:
    """``1536`` -> ``"1.5 KiB"``; ``None`` -> ``"n/a"``; keeps the sign."""
    if count is None:
        return "n/a"
    sign = "-" if count < 0 else ""
    value = float(abs(count))
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            if unit == "B":
                return f"{sign}{int(value)} B"
            return f"{sign}{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")

"""Runtime verifier: compile on a real backend, confirm donations, measure bytes.

This is the only part of jaxmem that imports jax, and it does so lazily:
importing ``jaxmem.runtime_check`` (or ``jaxmem.runtime_check.commands``,
which the CLI imports to build its parser) never imports jax.  The public
names below are resolved on first use.
"""

from __future__ import annotations

import importlib

__all__ = [
    "verify",
    "VerifyReport",
    "LeafDonation",
    "MemoryFigures",
    "assert_donated",
    "DonationNotUsableError",
    "track_donations",
    "DonatedArrayUsedError",
    "format_bytes",
]

_PROVIDERS = {
    "verify": "jaxmem.runtime_check.verifier",
    "VerifyReport": "jaxmem.runtime_check.report",
    "LeafDonation": "jaxmem.runtime_check.report",
    "MemoryFigures": "jaxmem.runtime_check.report",
    "format_bytes": "jaxmem.runtime_check.units",
    "assert_donated": "jaxmem.runtime_check.guard",
    "DonationNotUsableError": "jaxmem.runtime_check.guard",
    "track_donations": "jaxmem.runtime_check.tracker",
    "DonatedArrayUsedError": "jaxmem.runtime_check.tracker",
}


def __getattr__(name: str):
    module = _PROVIDERS.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxmem.runtime_check' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))

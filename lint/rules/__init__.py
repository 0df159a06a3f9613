"""The rule registry: one module per rule in this folder, collected by code.

Adding a rule means adding one module that defines ``RULE``; nothing here
changes (the way pyupgrade discovers its fixers).
"""

from __future__ import annotations

import importlib
import pkgutil

from jaxmem.lint.rules.base import Example, Rule


def _discover() -> dict[str, Rule]:
    rules = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("jxm"):
            rules.append(importlib.import_module(f"{__name__}.{info.name}").RULE)
    return {rule.code: rule for rule in sorted(rules, key=lambda r: r.code)}


RULES: dict[str, Rule] = _discover()
STATIC_CODES = tuple(code for code in RULES if code != "JXM201")

__all__ = ["RULES", "STATIC_CODES", "Rule", "Example"]

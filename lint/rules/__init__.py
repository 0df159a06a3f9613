"""The rule registry: one module per rule, collected here by code."""

from __future__ import annotations

from jaxmem.lint.rules import (
    jxm001_missed_donation,
    jxm002_dead_not_rebound,
    jxm101_use_after_donation,
    jxm102_donated_twice,
    jxm103_invalid_spec,
    jxm104_donated_value_escapes,
    jxm105_donated_in_loop,
    jxm106_pmap_keyword_donation,
    jxm107_debug_nans,
    jxm201_unusable_donation,
    jxm900_parse_error,
)
from jaxmem.lint.rules.base import Example, Rule

_MODULES = (
    jxm001_missed_donation,
    jxm002_dead_not_rebound,
    jxm101_use_after_donation,
    jxm102_donated_twice,
    jxm103_invalid_spec,
    jxm104_donated_value_escapes,
    jxm105_donated_in_loop,
    jxm106_pmap_keyword_donation,
    jxm107_debug_nans,
    jxm201_unusable_donation,
    jxm900_parse_error,
)

RULES: dict[str, Rule] = {module.RULE.code: module.RULE for module in _MODULES}
STATIC_CODES = tuple(code for code in RULES if code != "JXM201")

__all__ = ["RULES", "STATIC_CODES", "Rule", "Example"]

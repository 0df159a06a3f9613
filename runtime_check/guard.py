"""A CI guard: fail when an expected donation stops aliasing.

jax has no strict mode for donation: a refactor that changes an output's
dtype or shape silently turns a donation into a no-op (at most one warning
that names no argument).  ``assert_donated`` compiles the function and fails
with the leaves that are no longer reused.
"""

from __future__ import annotations

from typing import Callable, Iterable

from jaxmem.runtime_check.report import VerifyReport
from jaxmem.runtime_check.units import format_bytes


class DonationNotUsableError(AssertionError):
    """Some donated leaves are not reused by any output."""

    def __init__(self, report: VerifyReport, leaves):
        self.report = report
        self.leaves = list(leaves)
        lines = [f"{len(self.leaves)} donated leaf(s) of {report.function} not reused by any output:"]
        lines += [f"  {leaf.path} ({leaf.type_text}, {format_bytes(leaf.nbytes)}): {leaf.reason}"
                  for leaf in self.leaves]
        super().__init__("\n".join(lines))


def assert_donated(fn: Callable, *example_args, donate_argnums=None, donate_argnames=None,
                   static_argnums=None, static_argnames=None, backend: str | None = None,
                   wrapper: Callable | None = None, allow_unused: Iterable[str] = (),
                   **example_kwargs) -> VerifyReport:
    """Compile ``fn`` on the example inputs and require every donated leaf to be reused.

    Arguments are those of :func:`jaxmem.runtime_check.verify`.  ``allow_unused``
    lists leaf paths (``"opt_state['count']"``) that may stay unused.  Raises
    :class:`DonationNotUsableError` (an ``AssertionError``) naming the other
    unused leaves and why; returns the report otherwise.
    """
    from jaxmem.runtime_check.targets import resolve_target, split_bound
    from jaxmem.runtime_check.verifier import verify_target

    fn, example_args = split_bound(fn, example_args)
    target = resolve_target(fn, donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                            static_argnums=static_argnums, static_argnames=static_argnames, wrapper=wrapper)
    report = verify_target(target, example_args, example_kwargs, backend=backend)
    allowed = set(allow_unused)
    unknown = sorted(allowed - {leaf.path for leaf in report.leaves})
    if unknown:
        known = ", ".join(leaf.path for leaf in report.leaves[:8]) + (", ..." if len(report.leaves) > 8 else "")
        raise ValueError(f"allow_unused names {', '.join(map(repr, unknown))}, which is not a donated leaf of "
                         f"{report.function}; use the leaf paths of the report: {known}")
    failing = [leaf for leaf in report.unusable if leaf.path not in allowed]
    if failing:
        raise DonationNotUsableError(report, failing)
    return report

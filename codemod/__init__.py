"""jaxmem-fix: add missed buffer donations to jitted definitions.

The edit layer (:func:`add_donations`) works on one file's text and a list
of :class:`~jaxmem.findings.DonationFix`; the command line
(:mod:`jaxmem.codemod.cli`) runs the analysis and writes files; the libcst
codemod command (:mod:`jaxmem.codemod.command`) runs the same edits under
``python -m libcst.tool codemod``.  Nothing here imports jax.
"""

__all__ = ["AppliedEdit", "EditResult", "SkippedFix", "add_donations"]


def __getattr__(name: str):
    # Imported on first use: ``jaxmem-fix`` starts (and handles Ctrl-C) before libcst loads.
    if name in __all__:
        from jaxmem.codemod import edits

        return getattr(edits, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Command-line options shared by ``jaxmem check`` and ``jaxmem-fix``."""

from __future__ import annotations

import argparse


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options every command that runs the analysis shares (check, jaxmem-fix)."""
    parser.add_argument("--force-exclude", action="store_true",
                        help="apply excludes to files named on the command line too (use in pre-commit)")
    parser.add_argument("--jobs", "-j", type=job_count, default=1, metavar="N",
                        help="analysis worker processes (0: one per CPU; default: 1)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write .jaxmem_cache/")
    parser.add_argument("--config", metavar="FILE",
                        help="read settings from FILE instead of the nearest pyproject.toml")
    parser.add_argument("--stdin-filename", metavar="PATH", help="the name to report for source read from stdin")


def job_count(text: str) -> int:
    """``--jobs`` value: a whole number, 0 or more (0 means one per CPU)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers; use 0 (one per CPU) or more")
    return value

"""Command-line options shared by ``jaxmem check`` and ``jaxmem-fix``."""

from __future__ import annotations

import argparse


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options every command that runs the analysis shares (check, jaxmem-fix)."""
    parser.add_argument("--force-exclude", action="store_true",
                        help="apply excludes to files named on the command line too (use in pre-commit)")
    parser.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                        help="analysis worker processes (0: one per CPU; default: 1)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write .jaxmem_cache/")
    parser.add_argument("--config", metavar="FILE",
                        help="read settings from FILE instead of the nearest pyproject.toml")
    parser.add_argument("--stdin-filename", metavar="PATH", help="the name to report for source read from stdin")

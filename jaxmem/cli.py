"""The ``jaxmem`` command: ``check``, ``rule``, ``server``, ``version`` and the runtime commands.

Exit status: 0 clean, 1 findings, 2 usage error, bad config, missing path
or an internal error (a bug in jaxmem; the other files are still checked
and reported).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

import jaxmem
from jaxmem.deep import exit_if_abandoned
from jaxmem.findings import Confidence
from jaxmem.messages import report_internal_error
from jaxmem.options import add_run_options

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def main(argv=None) -> int:
    """Run ``jaxmem`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return handler(args)
    except KeyboardInterrupt:
        _error("interrupted (Ctrl-C) before it finished")
        exit_if_abandoned(EXIT_ERROR)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader went away (``jaxmem check | head``): no traceback, and
        # keep Python from failing again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FINDINGS
    except Exception as error:  # a bug in jaxmem: a message and exit 2, not a traceback and 1
        report_internal_error("jaxmem", error)
        return EXIT_ERROR


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="jaxmem",
        description="Find, fix and verify buffer donation in JAX programs.",
    )
    parser.add_argument("--version", action="version", version=f"jaxmem {jaxmem.__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    _add_check(subparsers)
    _add_rule(subparsers)
    _add_server(subparsers)
    _add_clean(subparsers)
    version = subparsers.add_parser("version", help="print jaxmem's version")
    version.set_defaults(handler=run_version)
    _add_runtime_commands(subparsers)
    return parser


def _add_check(subparsers) -> None:
    check = subparsers.add_parser(
        "check",
        help="report missed and unsafe buffer donations",
        description="Report missed and unsafe buffer donations (JXM rules). "
        "Exit 0 when clean, 1 with findings, 2 on usage or internal error.",
    )
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or folders to check (default: .); - reads stdin")
    check.add_argument("--format", "--output-format", dest="format",
                       choices=("text", "json", "sarif", "github", "gitlab"), default="text",
                       help="output format (default: text, flake8 style; github: workflow-command "
                       "annotations for GitHub Actions; gitlab: Code Quality JSON)")
    check.add_argument("--show-source", action="store_true",
                       help="show the source line of each finding, with a caret at its column (text format)")
    check.add_argument("--select", metavar="CODES",
                       help="comma-separated codes or prefixes to report (replaces the config's)")
    check.add_argument("--extend-select", metavar="CODES",
                       help="codes or prefixes to report in addition to the selected ones")
    check.add_argument("--ignore", metavar="CODES",
                       help="comma-separated codes or prefixes to skip (replaces the config's)")
    check.add_argument("--extend-ignore", metavar="CODES",
                       help="codes or prefixes to skip in addition to the ignored ones")
    check.add_argument("--min-confidence", metavar="LEVEL",
                       help="lowest confidence to report: low, medium or high "
                       "(default: medium)")
    check.add_argument("--exclude", metavar="GLOBS",
                       help="comma-separated globs of files or folders to skip "
                       "(replaces the config's)")
    check.add_argument("--extend-exclude", metavar="GLOBS",
                       help="globs to skip in addition to the excluded ones")
    add_run_options(check)
    check.add_argument("--output-file", "-o", metavar="FILE",
                       help="write the report to FILE instead of stdout")
    check.add_argument("--quiet", "-q", action="store_true",
                       help="print findings only: no summary, no progress")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of findings per code after the findings")
    check.add_argument("--exit-zero", action="store_true",
                       help="exit 0 even when there are findings")
    check.add_argument("--show-skipped", action="store_true",
                       help="after the findings, list the parameters considered and not proposed for donation, "
                       "with the reason (text format; json always lists them under `skipped`)")
    check.add_argument("--clear-cache", action="store_true",
                       help="remove the project's .jaxmem_cache/ before checking")
    check.set_defaults(handler=run_check)


def _add_clean(subparsers) -> None:
    clean = subparsers.add_parser(
        "clean", help="remove the project's cache (.jaxmem_cache/)",
        description="Remove the .jaxmem_cache/ folder of the project holding PATH "
        "(default: the current folder) and say how much it freed.")
    clean.add_argument("path", nargs="?", default=".", metavar="PATH",
                       help="a file or folder of the project (default: .)")
    clean.add_argument("--config", metavar="FILE",
                       help="the pyproject.toml whose folder is the project root")
    clean.set_defaults(handler=run_clean)


def _add_rule(subparsers) -> None:
    rule = subparsers.add_parser("rule", help="explain a rule (or list them all)")
    rule.add_argument("code", nargs="?", metavar="CODE", help="a rule code such as JXM001")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.set_defaults(handler=run_rule)


def _add_server(subparsers) -> None:
    server = subparsers.add_parser(
        "server",
        help="run the language server for editors (LSP over stdio)",
        description="Speak the Language Server Protocol on stdin/stdout: JXM diagnostics as files are "
        "opened, edited and saved, and quick fixes for missed donations. Needs the 'server' extra "
        "(pip install 'jaxmem[server]'). Exit 0 after the client's shutdown and exit.",
    )
    server.set_defaults(handler=run_server)


def _add_runtime_commands(subparsers) -> None:
    """Register ``verify``/``record`` when the runtime part is installed."""
    try:
        from jaxmem.runtime_check.commands import register
    except ImportError:
        return  # static checks must work without jax
    register(subparsers)


def run_check(args) -> int:
    """``jaxmem check``: analyse, render, pick the exit status."""
    from jaxmem.api import check_paths, is_internal_error
    from jaxmem.config import ConfigError, load_config
    from jaxmem.discovery import DiscoveryError, missing_paths
    from jaxmem.messages import skipped_lines, unwritable_output
    from jaxmem.outputs import all_findings, render, render_statistics, use_color
    from jaxmem.sources import SourceLines

    paths = args.paths or (["-"] if args.stdin_filename else ["."])
    missing = missing_paths(paths)
    for path in missing:
        _error(f"{path}: no such file or directory; check the path")
    paths = [p for p in paths if p not in missing]
    if not paths:
        return EXIT_ERROR
    if args.output_file is not None:
        problem = unwritable_output(args.output_file)
        if problem is not None:  # say so before the analysis, not after it
            _error(problem)
            return EXIT_ERROR
    try:
        config = load_config(paths, args.config)
        if args.clear_cache:
            _clear_cache(config.root, None if args.quiet else sys.stderr)  # stdout carries the report
        settings = _apply_flags(config.settings, args)
        show_progress = not args.quiet and sys.stderr.isatty()
        reports = check_paths(
            paths, settings, jobs=args.jobs, use_cache=not args.no_cache,
            progress=_print_progress if show_progress else None,
            config_file=args.config, force_exclude=args.force_exclude,
            stdin_filename=args.stdin_filename,
        )
        if show_progress:
            sys.stderr.write("\r\x1b[K")
    except (ConfigError, DiscoveryError) as error:
        _error(str(error))
        return EXIT_ERROR
    except Exception as error:  # a bug in the cross-file analysis
        report_internal_error("jaxmem", error)
        return EXIT_ERROR

    findings = all_findings(reports)
    to_stdout = args.output_file is None
    output = render(args.format, reports,
                    color=args.format == "text" and to_stdout and use_color(sys.stdout),
                    source_lines=SourceLines(settings.max_file_size) if args.show_source else None)
    if args.statistics and args.format == "text":
        output += render_statistics(findings)
    refusals = _refusals(reports, settings)
    if args.show_skipped and args.format == "text":
        output += "".join(line + "\n" for line in skipped_lines(refusals))
    if to_stdout:
        sys.stdout.write(output)
        sys.stdout.flush()
    else:
        try:
            with open(args.output_file, "w", encoding="utf-8") as out:
                out.write(output)
        except OSError as error:
            _error(f"{args.output_file}: cannot write the report: {error.strerror or error}")
            return EXIT_ERROR
    if not args.quiet:
        _print_summary(findings, len(reports), 0 if args.show_skipped else len(refusals))
    if missing or any(is_internal_error(f) for f in findings):
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def run_clean(args) -> int:
    """``jaxmem clean``: remove the project's cache folder."""
    from jaxmem.config import ConfigError, load_config

    if not os.path.exists(args.path):
        _error(f"{args.path}: no such file or directory; check the path")
        return EXIT_ERROR
    try:
        root = load_config([args.path], args.config).root
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    _clear_cache(root, sys.stdout)
    return EXIT_CLEAN


def _clear_cache(root, out) -> None:
    """Remove the cache of the project at ``root``; say so on ``out`` unless it is ``None``."""
    from jaxmem.cache import CACHE_DIR_NAME, clear

    folder = os.path.join(root, CACHE_DIR_NAME)
    freed = clear(root)
    if out is None:
        return
    if freed is None:
        print(f"jaxmem: no cache to remove at {folder}", file=out)
    else:
        print(f"jaxmem: removed {folder} ({freed / 2**20:.2f} MiB freed)", file=out)


def run_rule(args) -> int:
    """``jaxmem rule CODE`` prints the rule's documentation; ``--all`` lists the rules."""
    from jaxmem.outputs import available_rules

    rules = available_rules()
    if not rules:
        _error("the rule registry (jaxmem.lint.rules.RULES) could not be loaded")
        return EXIT_ERROR
    if args.all:
        width = max(len(rule.name) for rule in rules.values())
        for code in sorted(rules):
            rule = rules[code]
            print(f"{code}  {rule.name:<{width}}  {rule.summary}")
        return EXIT_CLEAN
    if not args.code:
        _error("name a rule code (e.g. jaxmem rule JXM001) or use --all")
        return EXIT_ERROR
    rule = rules.get(args.code.upper())
    if rule is None:
        _error(f"unknown rule {args.code!r}; known rules: {', '.join(sorted(rules))}")
        return EXIT_ERROR
    sys.stdout.write(rule.render())
    return EXIT_CLEAN


def run_server(args) -> int:
    """``jaxmem server``: serve until the client says exit."""
    try:
        from jaxmem.server.lsp import serve
    except ImportError as error:
        if (error.name or "").partition(".")[0] not in ("pygls", "lsprotocol"):
            raise
        _error(f"jaxmem server needs {error.name.partition('.')[0]}, which is not installed; "
               "install it with: pip install 'jaxmem[server]'")
        return EXIT_ERROR
    return serve()


def run_version(args) -> int:
    """``jaxmem version``."""
    print(f"jaxmem {jaxmem.__version__}")
    return EXIT_CLEAN


def _apply_flags(settings, args):
    """``settings`` with the command-line flags applied on top."""
    from jaxmem.config import parse_codes, parse_confidence

    changes = {}
    if args.select is not None:
        changes["select"] = parse_codes(_split(args.select), "command line", "--select")
    if args.extend_select is not None:
        changes["select"] = changes.get("select", settings.select) + parse_codes(
            _split(args.extend_select), "command line", "--extend-select")
    if args.ignore is not None:
        changes["ignore"] = parse_codes(_split(args.ignore), "command line", "--ignore")
    if args.extend_ignore is not None:
        changes["ignore"] = changes.get("ignore", settings.ignore) + parse_codes(
            _split(args.extend_ignore), "command line", "--extend-ignore")
    if args.min_confidence is not None:
        changes["min_confidence"] = parse_confidence(
            args.min_confidence, "command line", "--min-confidence")
    if args.exclude is not None:
        changes["exclude"] = tuple(_split(args.exclude))
    if args.extend_exclude is not None:
        changes["exclude"] = changes.get("exclude", settings.exclude) + tuple(
            _split(args.extend_exclude))
    return dataclasses.replace(settings, **changes)


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _print_progress(done: int, total: int, path: str) -> None:
    sys.stderr.write(f"\r\x1b[K[{done}/{total}] {path}")
    sys.stderr.flush()


def _refusals(reports, settings) -> list:
    """The donations considered and not proposed, when donation advice is selected at all."""
    if not (settings.wants("JXM001") or settings.wants("JXM002")):
        return []
    return [r for report in reports for r in report.refusals]


def _print_summary(findings, file_count: int, skipped: int = 0) -> None:
    from jaxmem.messages import skipped_summary

    note = skipped_summary(skipped)
    if not findings:
        sys.stderr.write(f"jaxmem: no findings in {file_count} file(s)" + (f"; {note}" if note else "") + ".\n")
        return
    safe = sum(1 for f in findings if f.fix is not None and f.confidence is Confidence.HIGH)
    unsafe = sum(1 for f in findings if f.fix is not None and f.confidence is not Confidence.HIGH)
    fixes = []
    if safe:
        fixes.append(f"{safe} fixable with jaxmem-fix")
    if unsafe:
        fixes.append(f"{unsafe} {'more' if safe else 'fixable'} once your run confirms them (jaxmem confirm, "
                     "then jaxmem-fix --verified) or with --unsafe-fixes")
    sys.stderr.write(
        f"jaxmem: {len(findings)} finding(s) in {file_count} file(s)"
        + "".join(", " + part for part in fixes) + (f"; {note}" if note else "") + ".\n"
    )


def _error(message: str) -> None:
    sys.stderr.write(f"jaxmem: error: {message}\n")


if __name__ == "__main__":
    sys.exit(main())

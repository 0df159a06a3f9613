"""``jaxmem-fix``: add the missed donations ``jaxmem check`` finds (JXM001).

Runs the analysis over the given paths, applies its high-confidence fixes
(``--unsafe-fixes``: medium too; low never) with :func:`add_donations`, and
writes each changed file atomically, only if it still holds the bytes that
were analysed.  Exit status, as pre-commit fixers use it: 0 nothing
changed and every file was fixable, 1 files were (or, with
``--diff``/``--check``, would be) changed or a file could not be fixed (it
does not parse, cannot be read, changed during the run, is read-only; said
on stderr), 2 on a usage, configuration or internal error.  The other
files are still fixed.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import io
import os
import sys

from jaxmem.options import add_run_options
from jaxmem.deep import exit_if_abandoned
from jaxmem.messages import printable, report_internal_error

EXIT_UNCHANGED, EXIT_CHANGED, EXIT_ERROR = 0, 1, 2
FIXED_CODE = "JXM001"
PARSE_ERROR_CODE = "JXM900"


def build_parser() -> argparse.ArgumentParser:
    """The ``jaxmem-fix`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="jaxmem-fix",
        description="Add missed buffer donations (JXM001) to jitted definitions, keeping the "
        "formatting. Exit 0 when nothing changed, 1 when files were (or would be) changed or a file "
        "could not be fixed (it does not parse, cannot be read, changed during the run or is read-only: "
        "said on stderr, the other files are still fixed), 2 on a usage, configuration or internal error.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders to fix (default: .); - reads stdin and writes the result to stdout")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff and write nothing")
    mode.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 when a file would change")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="also apply medium-confidence fixes (values owned by the caller, public functions)")
    parser.add_argument("--style", choices=("auto", "argnums", "argnames"),
                        help="spec keyword for definitions without one (default: config, else auto: "
                        "follow the file, then the project)")
    parser.add_argument("--jax-version", metavar="VERSION",
                        help="oldest jax the project supports (default: config jax-version, else the "
                        "lower bound in pyproject.toml/requirements*.txt); from 0.8.1 a bare @jax.jit "
                        "becomes @jax.jit(donate_argnums=...)")
    parser.add_argument("--verified", metavar="REPORT", action="append",
                        help="apply only donations confirmed by this `jaxmem confirm --out` report (at any "
                        "confidence) or `jaxmem verify --format json` report; repeat it to combine runs (a "
                        "donation one run refuted is never applied)")
    add_run_options(parser)
    parser.add_argument("--quiet", "-q", action="store_true", help="print errors only")
    return parser


def main(argv=None) -> int:
    """Run ``jaxmem-fix`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _Fixer(args).run()
    except KeyboardInterrupt:
        print("jaxmem-fix: error: interrupted (Ctrl-C); every file is either as it was or fully fixed",
              file=sys.stderr)
        exit_if_abandoned(EXIT_ERROR)
        return EXIT_ERROR
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as error:  # a bug in jaxmem: a message and exit 2, not a traceback and 1
        report_internal_error("jaxmem-fix", error)
        return EXIT_ERROR


class _Fixer:
    """One ``jaxmem-fix`` run."""

    def __init__(self, args) -> None:
        self.args = args
        self.paths = args.paths or (["-"] if args.stdin_filename else ["."])
        self.reads_stdin = "-" in self.paths
        # stdout carries the fixed text or the diff in those modes; talk on stderr.
        self.messages = sys.stderr if (self.reads_stdin or args.diff) else sys.stdout
        self.error = False
        self.unfixable = False
        self.changed_files = 0
        self.edit_count = 0
        self.refused_count = 0
        self.below_threshold = 0  # proposals not applied for their confidence alone
        self._project_style = None

    # -- output --------------------------------------------------------------

    def say(self, line: str) -> None:
        if not self.args.quiet:
            print(printable(line), file=self.messages)

    def fail(self, line: str) -> None:
        """Report an error of jaxmem itself or of its input (exit 2)."""
        self.error = True
        print(printable(line), file=sys.stderr)

    def cannot_fix(self, line: str) -> None:
        """Report a file left untouched because of the file itself (exit 1)."""
        self.unfixable = True
        print(printable(line), file=sys.stderr)

    # -- run -----------------------------------------------------------------

    def run(self) -> int:
        from jaxmem.api import check_paths
        from jaxmem.codemod.project import project_jax_lower_bound
        from jaxmem.codemod.verified import VerifiedReportError, load_verified_reports
        from jaxmem.config import ConfigError, load_config
        from jaxmem.discovery import DiscoveryError, missing_paths
        from jaxmem.findings import Confidence

        missing = missing_paths(self.paths)
        for path in missing:
            self.fail(f"jaxmem-fix: error: {path}: no such file or directory; check the path")
        self.paths = [p for p in self.paths if p not in missing]
        if not self.paths:
            return EXIT_ERROR
        try:
            config = load_config(self.paths, self.args.config)
            self.verified = load_verified_reports(self.args.verified) if self.args.verified else None
        except (ConfigError, VerifiedReportError) as error:
            print(f"jaxmem-fix: {error}", file=sys.stderr)
            return EXIT_ERROR
        settings = config.settings
        self.settings = settings
        self.style = self.args.style or settings.donation_style
        self.jax_version = self.args.jax_version or settings.jax_version or project_jax_lower_bound(config.root)
        self.threshold = Confidence.MEDIUM if self.args.unsafe_fixes else Confidence.HIGH
        self.stdin_data = sys.stdin.buffer.read() if self.reads_stdin else b""
        self.stdin_name = self.args.stdin_filename or "<stdin>"
        analysis = dataclasses.replace(settings, min_confidence=Confidence.MEDIUM)
        try:
            reports = check_paths(
                self.paths, analysis, jobs=self.args.jobs, use_cache=not self.args.no_cache,
                config_file=self.args.config, force_exclude=self.args.force_exclude,
                stdin_filename=self.args.stdin_filename, stdin=io.BytesIO(self.stdin_data),
            )
        except (ConfigError, DiscoveryError) as error:
            print(f"jaxmem-fix: {error}", file=sys.stderr)
            return EXIT_ERROR
        self.run_paths = [r.path for r in reports]
        self.analysed = {r.path: r.digest for r in reports}
        per_file = self.collect(reports)
        for path in sorted(per_file, key=str):
            self.fix_file(path, per_file[path])
        if self.reads_stdin and self.stdin_name not in per_file and not self.args.diff and not self.args.check:
            sys.stdout.buffer.write(self.stdin_data)  # nothing to fix: pass the input through
        self.summary()
        if self.error:
            return EXIT_ERROR
        return EXIT_CHANGED if self.changed_files or self.unfixable else EXIT_UNCHANGED

    def collect(self, reports) -> dict[str, list]:
        """Group applicable fixes by the file of their definition; report the rest."""
        from jaxmem.api import is_internal_error
        from jaxmem.outputs import location

        per_file: dict[str, list] = {}
        for report in reports:
            for finding in report.findings:
                if finding.code == PARSE_ERROR_CODE:
                    report_problem = self.fail if is_internal_error(finding) else self.cannot_fix
                    report_problem(f"{location(finding)}: error: {finding.message}; file left untouched")
                    continue
                if finding.code != FIXED_CODE:
                    continue
                path = finding.definition_path or finding.path
                if finding.fix is None:  # e.g. equinox, when no `donate=` mode is safe: the message says why
                    self.refused_count += 1
                    self.say(f"{path}:{finding.definition_line or finding.span.line}: "
                             f"{finding.function or finding.wrapped or '?'}: no automatic fix: {finding.message}")
                    continue
                parameter = f"`{finding.fix.name}`" if finding.fix.name else f"#{finding.fix.index}"
                line = (f"cell {finding.definition_cell}:{finding.definition_line}" if finding.definition_cell
                        else finding.fix.definition_line)
                where = f"{path}:{line}: {finding.function or finding.wrapped or '?'}"
                why = self.verified.why_not_confirmed(path, finding.fix) if self.verified is not None else None
                by_run = self.verified is not None and self.verified.any_confidence  # confirm: any confidence
                if finding.confidence.rank < self.threshold.rank and not by_run:
                    self.below_threshold += 1
                    self.say(f"{where}: not donating {parameter}: {finding.confidence.value} confidence "
                             "(the value may be read by code jaxmem cannot see); confirm it with a run "
                             "(`jaxmem confirm`) or apply with --unsafe-fixes")
                    continue
                if why is not None:
                    self.say(f"{where}: not donating {parameter}: {why}")
                    continue
                per_file.setdefault(path, []).append(finding.fix)
            for refusal in report.refusals:
                self.refused_count += 1
                cell = f"cell {refusal.cell}:" if refusal.cell is not None else ""
                self.say(f"{refusal.path}:{cell}{refusal.line}: {refusal.function}: refused `{refusal.parameter}`: "
                         f"{refusal.reason}")
        return per_file

    def project_style(self) -> str | None:
        """``argnums``/``argnames``: what the files of this run use more (read once, lazily)."""
        if self._project_style is None:
            from jaxmem.codemod.project import donation_style_of
            from jaxmem.sources import UnreadableFile, read_regular_file

            def texts():
                for path in self.run_paths:
                    if path == self.stdin_name and self.reads_stdin:
                        yield self.stdin_data.decode("utf-8", errors="replace")
                        continue
                    try:
                        data = read_regular_file(path, self.settings.max_file_size)
                    except UnreadableFile:
                        continue
                    yield data.decode("utf-8", errors="replace")

            self._project_style = donation_style_of(texts()) or ""
        return self._project_style or None

    def fix_file(self, path: str, fixes: list) -> None:
        """Apply ``fixes`` to ``path`` (or stdin) and write, diff or only count the result."""
        from jaxmem.codemod import textfile
        from jaxmem.codemod.edits import add_donations
        from jaxmem.deep import call_deep, too_deep_message
        from jaxmem.sources import digest

        is_stdin = self.reads_stdin and path == self.stdin_name
        try:
            source = textfile.decode(path, self.stdin_data) if is_stdin else textfile.read(
                path, self.settings.max_file_size)
        except textfile.SourceError as error:
            self.cannot_fix(f"jaxmem-fix: {error}")
            return
        if not is_stdin and digest(source.data) != self.analysed.get(path):
            # The fixes name lines of the analysed text; on other text they
            # could land on another function.
            self.cannot_fix(f"jaxmem-fix: {path}: changed since it was analysed (an editor or another "
                            "jaxmem-fix run?); left untouched, run jaxmem-fix again")
            return
        try:
            result = call_deep(
                add_donations, source.text, fixes, style=self.style, jax_version=self.jax_version,
                extra_wrappers=self.settings.extra_wrappers, project_style=self.project_style,
            )
        except RecursionError as error:
            self.cannot_fix(f"jaxmem-fix: {path}: {too_deep_message(error)}; left untouched")
            return
        if result.error:
            report_problem = self.fail if result.error.startswith("internal error") else self.cannot_fix
            report_problem(f"{path}: error: {result.error}")
        try:
            new_data = source.encode(result.source) if result.changed else source.data
        except textfile.SourceError as error:  # a notebook whose cells cannot take the edit
            self.cannot_fix(f"jaxmem-fix: {error}")
            return
        if is_stdin and not self.args.diff and not self.args.check:
            sys.stdout.buffer.write(new_data)
        if result.changed and not (self.args.diff or self.args.check or is_stdin):
            try:
                textfile.replace_if_unchanged(path, source.data, new_data)
            except textfile.SourceError as error:
                self.cannot_fix(f"jaxmem-fix: {error}")
                return
            except OSError as error:
                self.cannot_fix(f"jaxmem-fix: {path}: cannot write the fixed file: "
                                f"{error.strerror or error}; left untouched")
                return
        # Said only once the file really holds it.
        for done in (*result.edits, *result.skipped):
            self.say(_located(source, done))
        self.refused_count += len(result.skipped)
        if not result.changed:
            return
        self.changed_files += 1
        self.edit_count += len(result.edits)
        if self.args.diff:
            if isinstance(source, textfile.NotebookFile):
                sys.stdout.write(notebook_diff(source.notebook, result.source))
            else:
                sys.stdout.write(unified_diff(path, source.text, result.source))

    def summary(self) -> None:
        if not (self.edit_count or self.refused_count or self.below_threshold):
            return
        verb = "would add" if (self.args.diff or self.args.check) else "added"
        self.say(f"jaxmem-fix: {verb} {self.edit_count} donation(s) in {self.changed_files} file(s); "
                 f"{self.refused_count} left alone")
        if self.below_threshold:
            self.say(f"jaxmem-fix: {self.below_threshold} more below {self.threshold.value} confidence; let your own "
                     "run settle them: `jaxmem confirm --out confirm.json -- pytest` (or `-- python train.py`), "
                     "then `jaxmem-fix --verified confirm.json` applies what the run confirmed")


def unified_diff(path: str, before: str, after: str) -> str:
    """A ``git diff``-style unified diff of one file."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"a/{path}", tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _located(source, done) -> str:
    """An edit's or skipped fix's ``describe()`` (``"12: ..."``) with its line as
    ``source`` names lines: ``path:12``, or ``path:cell 3:1`` in a notebook."""
    return source.where(done.line) + done.describe().removeprefix(str(done.line))


def notebook_diff(notebook, after: str) -> str:
    """A unified diff per changed cell, headed ``a/train.ipynb:cell 3`` (as ruff shows notebook diffs)."""
    return "".join(
        unified_diff(f"{notebook.path}:cell {number}", before, new)
        for number, before, new in notebook.cell_sources(after)
    )


if __name__ == "__main__":
    sys.exit(main())

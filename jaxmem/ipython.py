"""jaxmem inside IPython and Jupyter: ``%load_ext jaxmem``, then ``%jaxmem``.

``%jaxmem`` checks the cells this session has run, in the order they ran
(IPython's input history), so a finding names the cell as ``In [3]``: what
runs in a notebook is the history, not the file on disk, which may be
unsaved or run out of order.  ``%jaxmem --diff`` shows the edits
``jaxmem-fix`` would make to those cells, and ``%jaxmem --fix`` puts the
fixed cell in the next input, to run in place of the old one.
``%jaxmem on`` checks each cell before it runs (with the history) and
prints only what is new, so a read of a donated array is named before it
raises; ``%jaxmem off`` stops.  ``%jaxmem confirm on`` settles the proposals
the analysis cannot prove on the cells run next (see
:mod:`jaxmem.ipython_confirm`); ``--fix`` then applies the confirmed ones.

Only the text of the cells is read: nothing is imported or run.  A cell that
did not compile (it never ran) counts as empty.  The project around the
working folder (``pyproject.toml`` or ``.git``) is read as ``jaxmem check``
reads it, with its cache: its calls count, and the findings reported are the
session's and those of the project's functions the cells call
(:mod:`jaxmem.ipython_session`); the edits are :mod:`jaxmem.ipython_fixes`'.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import time

from jaxmem.findings import Confidence
from jaxmem.ipython_fixes import FileFix, fixed_cells, fixed_files, skipped_line
from jaxmem.ipython_session import (
    SESSION_PATH, SessionCheck, check_session, finding_key, finding_line, in_session_terms, session_sources,
)
from jaxmem.notebooks import NotebookError

# After a check slower than this, ``%jaxmem on`` says what it costs (once).
SLOW_CHECK_S = 2.0


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{message}\n{self.format_usage().rstrip()}")

    def exit(self, status=0, message=None):
        raise _UsageError(message or "")


def _parser() -> _Parser:
    parser = _Parser(prog="%jaxmem", add_help=True,
                     description="Check the cells this session has run for missed and unsafe buffer donations.")
    parser.add_argument("mode", nargs="?", choices=("on", "off", "confirm"),
                        help="on: check each cell before it runs and print what is new; off: stop; "
                             "confirm [on|off]: watch the proposed donations on the cells run next, report")
    parser.add_argument("switch", nargs="?", choices=("on", "off"), help=argparse.SUPPRESS)
    parser.add_argument("--diff", action="store_true", help="show the edits jaxmem-fix would make, per cell")
    parser.add_argument("--fix", action="store_true",
                        help="put the fixed cell in the next input (one changed cell), else show the diff")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="with --diff/--fix: apply medium-confidence proposals too")
    parser.add_argument("--min-confidence", metavar="LEVEL", help="low, medium or high (default: the config's)")
    parser.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes to report")
    parser.add_argument("--ignore", metavar="CODES", help="comma-separated codes or prefixes to skip")
    parser.add_argument("--show-skipped", action="store_true",
                        help="list the parameters considered and not proposed, with the reason")
    parser.add_argument("--no-project", action="store_true",
                        help="read only the session's cells, not the project around the working folder")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write .jaxmem_cache/")
    return parser


class JaxmemMagics:
    """The ``%jaxmem`` line magic of one IPython shell, and its ``on`` mode."""

    def __init__(self, shell) -> None:
        from jaxmem.ipython_confirm import SessionConfirm

        self.shell = shell
        self.auto = False
        self.said_slow = False
        self.reported: set = set()
        self.confirm = SessionConfirm(shell, self._confirm_check)
        self.confirm_options = _parser().parse_args(["--min-confidence", "low"])
        # With ``on`` and ``confirm on`` both, the cell about to run is checked once, at any
        # confidence: ``(what was checked, the check)``; ``on`` prints its part of it.
        self._shared: tuple | None = None

    # -- the magic -------------------------------------------------------------

    def __call__(self, line: str = "") -> None:
        """``%jaxmem [on|off] [--diff|--fix] [options]``: see ``%jaxmem --help``."""
        try:
            args = _parser().parse_args(shlex.split(line))
        except _UsageError as error:
            print(str(error).strip())
            return
        except ValueError as error:  # shlex: an unclosed quote
            print(f"%jaxmem: {error}; see %jaxmem --help")
            return
        if args.switch and args.mode != "confirm":
            print(f"%jaxmem: `{args.switch}` follows only `confirm`; see %jaxmem --help")
            return
        if args.mode == "confirm":
            self._confirm(args)
            return
        if args.mode == "off":
            self._stop()
            print("jaxmem: no longer checking each cell.")
            return
        check = self._check(args)
        if check is None:
            return
        if args.mode == "on":
            self._start(args)
            self.reported = {finding_key(f) for f in check.findings}
        if args.diff or args.fix:
            self._show_fixes(check, args)
            return
        self._print(check, args)
        if args.mode == "on":
            print("jaxmem: checking each cell before it runs from now on; `%jaxmem off` stops.")

    def _check(self, args, next_cell: str | None = None) -> SessionCheck | None:
        """Check the session's cells (and ``next_cell``, about to run as the next one)."""
        from jaxmem.config import ConfigError, load_config, parse_codes, parse_confidence
        from jaxmem.discovery import DiscoveryError

        try:
            settings = load_config(["."]).settings
            changes = {}
            if args.min_confidence:
                changes["min_confidence"] = parse_confidence(args.min_confidence, "%jaxmem", "--min-confidence")
            if args.select:
                changes["select"] = parse_codes(_codes(args.select), "%jaxmem", "--select")
            if args.ignore:
                changes["ignore"] = parse_codes(_codes(args.ignore), "%jaxmem", "--ignore")
            if args.diff or args.fix:  # the fixer reads proposals below high too (--unsafe-fixes, confirmed)
                changes["min_confidence"] = Confidence.LOW
            settings = dataclasses.replace(settings, **changes)
            sources = session_sources(self.shell.history_manager) + ([] if next_cell is None else [next_cell])
            if next_cell is not None and self.auto and self.confirm.watching and not (args.select or args.ignore):
                return self._shared_check(sources, settings, args)
            return check_session(sources, settings, project=not args.no_project, use_cache=not args.no_cache)
        except (ConfigError, DiscoveryError) as error:
            print(f"jaxmem: error: {error}")
            return None

    def _shared_check(self, sources: list[str], settings, args) -> SessionCheck:
        """The check of ``sources`` at any confidence, made once for both watches of a cell,
        seen with ``settings``' lowest confidence (the analysis does not depend on it)."""
        every = dataclasses.replace(settings, min_confidence=Confidence.LOW)
        key = (sources, every, not args.no_project, not args.no_cache)
        if self._shared is None or self._shared[0] != key:
            self._shared = (key, check_session(sources, every, project=not args.no_project,
                                               use_cache=not args.no_cache))
        check = self._shared[1]
        shown = [f for f in check.findings if f.confidence.rank >= settings.min_confidence.rank]
        return dataclasses.replace(check, findings=shown, settings=settings)

    def _print(self, check: SessionCheck, args, only_new: bool = False) -> None:
        findings = check.findings
        if only_new:
            findings = [f for f in findings if finding_key(f) not in self.reported]
            self.reported.update(finding_key(f) for f in findings)
        from jaxmem.ipython_confirm import applies, outcome_of
        from jaxmem.runtime_check.confirm_report import REFUTED

        outcomes = self.confirm.outcomes()
        for finding in findings:
            outcome = outcome_of(finding, check.notebook, outcomes)
            print(finding_line(finding) + (f" [{outcome} by this session's run]" if outcome else ""))
        if args.show_skipped:
            for refusal in sorted(check.refusals, key=lambda r: (r.cell or 0, r.line)):
                where = f"In [{refusal.cell}], line {refusal.line}" if refusal.cell is not None else \
                    f"{refusal.path}:{refusal.line}"
                print(in_session_terms(f"{where}: {refusal.function}: `{refusal.parameter}` not proposed: "
                                       f"{refusal.reason}"))
        if only_new:
            return
        cells = len(session_sources(self.shell.history_manager))
        later = f" ({check.superseded} more on definitions a later cell replaced)" if check.superseded else ""
        if not findings:
            print(f"jaxmem: no findings in the {cells} cell(s) run so far{later}.")
            return
        fixable = refuted = more = 0
        files = set()  # project files with a fix to make
        for finding in findings:
            if finding.fix is None:
                continue
            if outcome_of(finding, check.notebook, outcomes) == REFUTED:
                refuted += 1
            elif not applies(finding, check.notebook, outcomes, Confidence.HIGH):
                more += 1
            elif finding.path == SESSION_PATH:
                fixable += 1
            else:
                files.add(finding.path)
        where = f"in the {cells} cell(s) run so far{later}"
        if any(f.path != SESSION_PATH for f in findings):
            where += " and the project files they call"
        parts = [f"jaxmem: {len(findings)} finding(s) {where}"]
        if fixable:
            parts.append(f"{fixable} fixable: `%jaxmem --diff` shows the edits, `%jaxmem --fix` makes them")
        if refuted:
            parts.append(f"{refuted} refuted by this session's run (`%jaxmem confirm` says why)")
        if more:
            parts.append(f"{more} more at lower confidence: `%jaxmem confirm on`, then running the cells again, "
                         "settles them on this session's run")
        if files:
            parts.append(f"{len(files)} project file(s) to fix: `%jaxmem --diff` shows the edits, `%jaxmem --fix` "
                         "writes them")
        print("; ".join(parts) + ".")

    def _show_fixes(self, check: SessionCheck, args) -> None:
        from jaxmem.codemod.cli import unified_diff
        from jaxmem.ipython_confirm import outcome_of
        from jaxmem.runtime_check.confirm_report import REFUTED

        outcomes = self.confirm.outcomes()
        try:
            changes, skipped = fixed_cells(check, unsafe=args.unsafe_fixes, confirmations=outcomes)
        except NotebookError as error:
            print(f"jaxmem: cannot fix: {in_session_terms(str(error))}")
            return
        for skip in skipped:
            print(skipped_line(check.notebook, skip))
        files = [fix for fix in fixed_files(check, unsafe=args.unsafe_fixes, confirmations=outcomes)
                 if fix.problem or fix.edits]
        if not changes and not files:
            below = sum(1 for f in check.findings if f.fix is not None and f.confidence is not Confidence.HIGH
                        and outcome_of(f, check.notebook, outcomes) != REFUTED)
            note = f"; {below} proposal(s) below high confidence: `%jaxmem confirm on` settles them on your run, " \
                "or add --unsafe-fixes" if below and not args.unsafe_fixes else ""
            print(f"jaxmem: nothing to fix{note}.")
            return
        self._fix_files(files, args)
        if not changes:
            return
        if args.fix and len(changes) == 1:
            number, _, new = changes[0]
            self.shell.set_next_input(new.rstrip("\n"), replace=False)
            print(f"jaxmem: the fixed In [{number}] is in the next input: run it to redefine what it defines "
                  "with the donation.")
            return
        for number, old, new in changes:
            old, new = _ended(old), _ended(new)  # a cell's last line has no newline to mark
            print(unified_diff(f"In [{number}]", old, new).replace(f"a/In [{number}]", f"In [{number}]")
                  .replace(f"b/In [{number}]", f"In [{number}] (fixed)"), end="")
        if args.fix:
            print(f"jaxmem: the fix changes {len(changes)} cells; edit them as the diff shows and run them again.")

    def _fix_files(self, files: list[FileFix], args) -> None:
        """Show (``--diff``) or write (``--fix``) the edits of the project files the session calls."""
        from jaxmem.codemod import textfile
        from jaxmem.codemod.cli import unified_diff

        for fix in files:
            if fix.problem:
                print(f"jaxmem: cannot fix: {fix.problem}")
                continue
            if not args.fix:
                print(unified_diff(fix.path, fix.source.text, fix.after), end="")
                continue
            try:
                textfile.replace_if_unchanged(fix.path, fix.source.data, fix.source.encode(fix.after))
            except (textfile.SourceError, OSError) as error:
                print(f"jaxmem: cannot fix: {getattr(error, 'strerror', None) or error}; {fix.path} left untouched")
                continue
            print(f"jaxmem: added {fix.edits} donation(s) to {fix.path}; the session still runs the old "
                  "definitions: reload the module (importlib.reload) and run the cells that import from it again.")

    # -- confirm -----------------------------------------------------------------

    def _confirm(self, args) -> None:
        """``%jaxmem confirm [on|off]``: start or stop watching; report what was found."""
        if args.switch == "on":
            args.min_confidence = "low"  # the watch takes every proposal
            self.confirm_options = args
            print(self.confirm.start())
            return
        if args.switch == "off":
            self.confirm.stop()
        print(self.confirm.report())

    def _confirm_check(self, next_cell: str) -> SessionCheck | None:
        """The session with ``next_cell``, every proposal at any confidence (the watch's input)."""
        return self._check(self.confirm_options, next_cell=next_cell)

    # -- on / off --------------------------------------------------------------

    def _start(self, args) -> None:
        if not self.auto:
            self.shell.events.register("pre_run_cell", self._before_cell)
        self.auto = True
        self.auto_options = args

    def _stop(self) -> None:
        if self.auto:
            self.shell.events.unregister("pre_run_cell", self._before_cell)
        self.auto = False

    def _before_cell(self, info) -> None:
        """Before each cell (``%jaxmem on``): check the history with the cell about to
        run and print the findings not printed before, so a read of a donated array is
        named before it raises, not after a long cell fails."""
        raw = getattr(info, "raw_cell", "") or ""
        if not getattr(info, "store_history", True) or not raw.strip() or raw.lstrip().startswith("%jaxmem"):
            return  # not part of the history, or the magic prints its own report
        try:
            transformed = getattr(info, "transformed_cell", None) or self.shell.transform_cell(raw)
            compile(transformed, "<cell>", "exec")
        except (SyntaxError, ValueError):
            return  # it will not run
        try:
            started = time.perf_counter()
            check = self._check(self.auto_options, next_cell=raw)
            if check is not None:
                self._print(check, self.auto_options, only_new=True)
            took = time.perf_counter() - started
            if took > SLOW_CHECK_S and not self.said_slow:
                self.said_slow = True
                print(f"jaxmem: checking the {len(check.notebook.cells) if check else '?'} cells run so far took "
                      f"{took:.1f} s before this cell; `%jaxmem off` stops it, `%jaxmem` checks when you ask.")
        except Exception as error:  # a bug in jaxmem: say it once, do not disturb every cell after
            self._stop()
            print(f"jaxmem: internal error ({type(error).__name__}: {error}); stopped checking each cell. "
                  "Please report it to the jaxmem developers; `%jaxmem` shows the traceback.")


def _ended(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _codes(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def load_ipython_extension(shell) -> None:
    """``%load_ext jaxmem``: register ``%jaxmem``."""
    magics = JaxmemMagics(shell)
    shell.register_magic_function(magics, magic_kind="line", magic_name="jaxmem")
    shell._jaxmem_magics = magics  # noqa: SLF001 (found again by unload)


def unload_ipython_extension(shell) -> None:
    """``%unload_ext jaxmem``: stop checking after each cell."""
    magics = getattr(shell, "_jaxmem_magics", None)
    if magics is not None:
        magics._stop()
        magics.confirm.stop()

"""``%jaxmem confirm``: settle the session's proposed donations on the cells run next.

What the static analysis cannot prove (who else holds a state's arrays,
whether a later cell reads them) the session's own run can show, as
``jaxmem confirm`` shows it for a script.  ``%jaxmem confirm on`` watches
every donation ``%jaxmem`` proposes, at any confidence, in the jitted
functions that the cells run from then on define (and the project's, once
a cell imports or reloads their module): before each cell runs,
the session with that cell is checked again and its proposals join the
watch.  Each call of a watched function is made with the donation, after
checking that nothing else holds the donated arrays (a list, a closure, an
object's attribute, IPython's ``Out``); a later read of a donated array is
caught where it happens.  ``%jaxmem confirm`` reports each proposal as
confirmed, refuted (the holder or the read, and where) or not observed, and
``%jaxmem --diff``/``--fix`` then apply the confirmed ones at any confidence
and never a refuted one.  ``%jaxmem confirm off`` stops watching; what was
found stays for the fixes.

The donations are made for real: the run that refutes a donation by a read
has deleted that array, so the cells that make it must run again (the
message says so).  A function defined before ``%jaxmem confirm on`` is not
watched until its cell runs again.
"""

from __future__ import annotations

import os
import re

from jaxmem.findings import Confidence

# Where the watch files a cell's definitions: an absolute name no file has.
SESSION_FOLDER = "/<ipython-session>"
_CELL_PATH = re.compile(re.escape(SESSION_FOLDER) + r"/In\[(\d+)\]:(\d+)")


def cell_path(number: int) -> str:
    """The path under which cell ``In [number]``'s definitions are watched."""
    return f"{SESSION_FOLDER}/In[{number}]"


def _place(finding, notebook) -> tuple[str, int] | None:
    """``(path, line)`` under which the watch files ``finding``'s proposed definition:
    a session cell's, or a project Python file's own (None in a project notebook)."""
    from jaxmem.ipython_session import SESSION_PATH

    path = finding.definition_path or finding.path
    if path == SESSION_PATH:
        cell, line = notebook.locate(finding.fix.definition_line)
        return None if cell is None else (cell_path(cell), line)
    if path.endswith(".py"):
        return os.path.abspath(path), finding.fix.definition_line
    return None


def proposal_key_of(finding, notebook) -> str | None:
    """The watch's key of the donation ``finding`` proposes (None: not watched)."""
    from jaxmem.runtime_check.confirm import proposal_key

    place = _place(finding, notebook)
    return None if place is None else proposal_key(*place, finding.fix.name, finding.fix.index)


def session_proposals(check) -> list[dict]:
    """The donations ``check`` (a :class:`jaxmem.ipython.SessionCheck`) proposes in the
    session's cells and in the project files they call."""
    from jaxmem.runtime_check.confirm_report import PROPOSING_CODE

    proposals = {}
    for finding in check.findings:
        if finding.code != PROPOSING_CODE or finding.fix is None:
            continue
        place = _place(finding, check.notebook)
        if place is None:
            continue
        proposals[(place, finding.fix.name, finding.fix.index)] = {
            "definition_path": place[0], "definition_line": place[1],
            "function": finding.function or finding.wrapped or "?",
            "parameter_name": finding.fix.name, "parameter_index": finding.fix.index,
            "confidence": finding.confidence.value, "code": finding.code}
    return list(proposals.values())


class SessionConfirm:
    """The watch of one IPython shell (``%jaxmem confirm on`` to ``off``) and what it found."""

    def __init__(self, shell, check) -> None:
        self.shell = shell
        self.check = check  # check(next_cell) -> SessionCheck of the history and that cell, at any confidence
        self.confirmer = None
        self._block = None
        self._told: set = set()  # refutations already printed

    @property
    def watching(self) -> bool:
        """Whether the cells that run now are watched."""
        return self._block is not None

    def start(self) -> str:
        """Start watching; what to tell the user."""
        if self.watching:
            return "jaxmem confirm: already watching; `%jaxmem confirm` reports, `%jaxmem confirm off` stops."
        from jaxmem.runtime_check.confirm import confirming

        block = confirming([], set(), place_of=self._place_of)
        try:
            confirmer = block.__enter__()
        except ImportError as error:  # jax is optional for the static tool
            return f"jaxmem confirm: needs jax in this kernel ({error}); install jax, then `%jaxmem confirm on`."
        if self.confirmer is not None:  # a second watch goes on from what the first found
            confirmer.watches = self.confirmer.watches
            for watches in confirmer.watches.values():
                for watch in watches:
                    watch.active = not watch.refutations
        self.confirmer, self._block = confirmer, block
        self.shell.events.register("pre_run_cell", self._before_cell)
        self.shell.events.register("post_run_cell", self._after_cell)
        return ("jaxmem confirm: watching the proposed donations of the cells you run from now on (each call is "
                "made with the donation, and checked); run the cells that define and call your jitted functions "
                "again (importlib.reload the project modules that define them), then `%jaxmem confirm` reports "
                "and `%jaxmem --fix` applies what the run confirmed.")

    def stop(self) -> None:
        """Stop watching (what was found stays)."""
        if not self.watching:
            return
        self.shell.events.unregister("pre_run_cell", self._before_cell)
        self.shell.events.unregister("post_run_cell", self._after_cell)
        block, self._block = self._block, None
        block.__exit__(None, None, None)

    # -- the watch ---------------------------------------------------------------

    def _place_of(self, code_name: str, line: int) -> tuple[str, int]:
        from jaxmem.runtime_check.notebook_run import cell_numbers

        number = cell_numbers(self.shell).get(code_name)
        return (code_name if number is None else cell_path(number)), line

    def _before_cell(self, info) -> None:
        raw = getattr(info, "raw_cell", "") or ""
        if not getattr(info, "store_history", True) or not raw.strip() or raw.lstrip().startswith("%jaxmem"):
            return
        try:
            check = self.check(raw)
        except Exception as error:  # a bug in jaxmem: say it once and stop, do not disturb every cell
            self.stop()
            print(f"jaxmem confirm: internal error ({type(error).__name__}: {error}); stopped watching. "
                  "Please report it to the jaxmem developers.")
            return
        if check is not None:
            self.confirmer.add_proposals(session_proposals(check))

    def _after_cell(self, result) -> None:
        error = getattr(result, "error_in_exec", None)
        if error is not None and self.confirmer is not None:
            self.confirmer.on_error(error)
        for proposal in self.proposals():
            for refutation in proposal["refutations"]:
                told = (proposal["key"], refutation["message"])
                if told in self._told:
                    continue
                self._told.add(told)
                after = ("; the error above comes from this watch's donation, not from your code: run the cells "
                         "that make it again (the watch no longer donates it)") if refutation["kind"] == "read-after" \
                    else ""
                print(f"jaxmem confirm: {self._where(proposal)}: not donating `{_parameter(proposal)}` any more: "
                      f"{self.in_cells(refutation['message'])}{after}")

    # -- what it found -------------------------------------------------------------

    def proposals(self) -> list[dict]:
        """Every watched proposal with its outcome (the shape of ``jaxmem confirm --out``'s)."""
        from jaxmem.runtime_check.confirm_report import merge_runs

        if self.confirmer is None:
            return []
        return merge_runs([self.confirmer.to_json()])

    def outcomes(self) -> dict[str, str]:
        """Proposal key -> confirmed, refuted or not observed."""
        return {proposal["key"]: proposal["outcome"] for proposal in self.proposals()}

    def report(self) -> str:
        """``%jaxmem confirm``: each watched proposal's outcome, in cells."""
        from jaxmem.runtime_check.confirm_report import CONFIRMED, NOT_OBSERVED, REFUTED, proposal_lines

        if self.confirmer is None:
            return ("jaxmem confirm: nothing watched yet: `%jaxmem confirm on`, then run the cells that define and "
                    "call your jitted functions.")
        proposals = self.proposals()
        called = [p for p in proposals if p["calls"] or p["refutations"]]
        lines, counts = proposal_lines(called, lambda path, line: f"{path}:{line}", never_called="no cell called it")
        lines = [self.in_cells(line) for line in lines]  # the definitions' places and the messages' sites
        uncalled = len(proposals) - len(called)
        state = "watching" if self.watching else "stopped"
        summary = (f"jaxmem confirm ({state}): {counts[CONFIRMED]} confirmed, {counts[REFUTED]} refuted, "
                   f"{counts[NOT_OBSERVED]} not observed")
        if uncalled:
            summary += f"; {uncalled} more proposed but not called since the watch began"
        lines.append(summary + ".")
        if counts[CONFIRMED]:
            lines.append("`%jaxmem --fix` applies the confirmed ones (at any confidence); a confirmation covers "
                         "what these cells did, not other inputs.")
        return "\n".join(lines)

    def in_cells(self, text: str) -> str:
        """``text`` with the cells' code names and watch paths written ``In [n], line L``."""
        from jaxmem.runtime_check.notebook_run import cell_numbers, name_cells

        text = name_cells(text, {name: f"In [{number}]" for name, number in cell_numbers(self.shell).items()})
        text = _CELL_PATH.sub(lambda m: f"In [{m.group(1)}], line {m.group(2)}", text)
        return text.replace(os.getcwd() + os.sep, "")

    def _where(self, proposal: dict) -> str:
        where = self.in_cells(f"{proposal['definition_path']}:{proposal['definition_line']}")
        return f"{where}: {proposal['function']}"


def _parameter(proposal: dict) -> str:
    return proposal["parameter_name"] or f"#{proposal['parameter_index']}"


def outcome_of(finding, notebook, outcomes: dict[str, str]) -> str | None:
    """What the watch found of ``finding``'s proposal (confirmed, refuted, not observed), or None."""
    if finding.fix is None or not outcomes:
        return None
    return outcomes.get(proposal_key_of(finding, notebook))


def applies(finding, notebook, outcomes: dict[str, str], threshold: Confidence) -> bool:
    """Whether ``finding``'s fix is made: at ``threshold`` or above unless the run refuted
    it, or confirmed by the run at any confidence."""
    from jaxmem.runtime_check.confirm_report import CONFIRMED, REFUTED

    if finding.fix is None:
        return False
    outcome = outcome_of(finding, notebook, outcomes)
    return outcome != REFUTED and (outcome == CONFIRMED or finding.confidence.rank >= threshold.rank)

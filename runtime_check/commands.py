"""The ``verify``, ``record``, ``run`` and ``confirm`` subcommands of ``jaxmem``.

Importing this module must not import jax: the main CLI imports it to
build its parser even where only ``jaxmem check`` is used.  Handlers import
the runtime pieces when they run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

DEFAULT_CONFIG = "jaxmem.yaml"
DEFAULT_RECORD = "jaxmem-record.json"
_GENERIC_PYTHONS = {"python", "python3", f"python3.{sys.version_info.minor}"}


def register(subparsers) -> None:
    """Add ``verify``, ``record``, ``run`` and ``confirm`` to an argparse subparsers object."""
    verify = subparsers.add_parser(
        "verify", help="compile jitted functions on a real backend and confirm their donations",
        description="Compile each function with and without its donation and report, per donated "
                    "pytree leaf, whether an output reused it and how many bytes that saves. "
                    f"Targets come from {DEFAULT_CONFIG} or from a record file (--record).")
    verify.add_argument("--config", default=None, metavar="FILE",
                        help=f"YAML file listing functions and example inputs (default: ./{DEFAULT_CONFIG})")
    verify.add_argument("--record", default=None, metavar="FILE",
                        help="verify every function recorded by `jaxmem record`, with the donation the "
                             "static analysis proposes or the one it declares")
    verify.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    verify.add_argument("--output", default=None, metavar="REPORT",
                        help="also write the JSON report here (input of `jaxmem-fix --verified`)")
    verify.add_argument("--backend", default=None,
                        help="jax backend to compile for (default: jax's default; with --record, signatures "
                             "that can be rebuilt from the record are compiled again for it)")
    verify.set_defaults(handler=run_verify)

    record = subparsers.add_parser(
        "record", help="run a program and record the signatures of its jitted calls",
        description="Run `python script.py ARGS` (this runs your program, as python would) with "
                    "jax.jit, jax.pmap, nnx.jit and eqx.filter_jit wrapped; write the abstract signature "
                    "(shapes, dtypes, shardings, static values) of every jitted call and verify each "
                    "new signature's donation on its real arguments while the program runs. The record "
                    "is plain JSON (nothing pickled): reading it with `jaxmem verify --record` runs no code, "
                    "except with --backend, which imports the recorded modules to compile them again.")
    record.add_argument("--out", default=DEFAULT_RECORD, metavar="FILE",
                        help=f"where to write the record (default: {DEFAULT_RECORD})")
    record.add_argument("command", nargs=argparse.REMAINDER, help="-- python script.py ARGS")
    record.set_defaults(handler=run_record)

    run = subparsers.add_parser(
        "run", help="run a program with the donation tracker on",
        description="Run `python script.py ARGS`; an 'Array has been deleted' error then names the "
                    "call, file, line and parameter that donated the array.")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- python script.py ARGS")
    run.set_defaults(handler=run_tracked)

    confirm = subparsers.add_parser(
        "confirm", help="run a program and confirm or refute each proposed donation on its real calls",
        description="Run the static analysis of the project, then `python script.py ARGS` (or `pytest ARGS`) "
                    "with every proposed donation applied and watched: per call, no donated leaf may be held "
                    "by another live object or appear twice, no donated array may be read after the call, "
                    "and an output must reuse it. Each proposal ends confirmed, refuted (why, where) or not "
                    "observed; `jaxmem-fix --verified REPORT` applies the confirmed ones. The command's exit "
                    "status passes through.")
    confirm.add_argument("--out", default=None, metavar="FILE",
                         help="write the JSON report here (input of `jaxmem-fix --verified`)")
    confirm.add_argument("command", nargs=argparse.REMAINDER,
                         help="-- python train.py ARGS | -- pytest ARGS | -- train.ipynb (its code cells, in order)")
    confirm.set_defaults(handler=run_confirm)


def _program(command: list[str], notebooks: bool = False) -> tuple[list[str], str | None]:
    """``[python, target...]`` from the words after ``--``, or an error message;
    ``notebooks``: a ``.ipynb`` may be the target (run cell by cell)."""
    words = list(command)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        return [], "give the program to run after '--', e.g. `-- python train.py --steps 10`"
    interpreter = sys.executable
    first = os.path.basename(words[0])
    if first in ("pytest", "py.test"):
        words = ["python", "-m", "pytest", *words[1:]]
        first = "python"
    if first in _GENERIC_PYTHONS:
        words = words[1:]
    elif first.startswith("python") and not first.endswith(".py"):
        interpreter, words = words[0], words[1:]
    if not words:
        return [], "give the script to run after the interpreter, e.g. `-- python train.py`"
    if notebooks and words[0].lower().endswith(".ipynb"):
        from jaxmem.notebooks import NotebookError
        from jaxmem.runtime_check.notebook_run import read_notebook_file
        from jaxmem.sources import UnreadableFile

        try:
            read_notebook_file(words[0])
        except (UnreadableFile, NotebookError) as error:
            return [], f"{words[0]}: {error}"
        return [interpreter, *words], None
    if words[0] != "-m" and not words[0].endswith(".py") and not os.path.isfile(words[0]):
        return [], f"{words[0]}: not a Python script; expected `-- python script.py ARGS` or `-- python -m module`"
    return [interpreter, *words], None


def _launch(mode: str, command: list[str], extra: list[str]) -> int:
    program, error = _program(command)
    if error:
        print(f"jaxmem {mode}: {error}", file=sys.stderr)
        return 2
    launcher = [program[0], "-m", "jaxmem.runtime_check.launcher", mode, *extra, "--", *program[1:]]
    return subprocess.call(launcher)


def run_record(args) -> int:
    """Handler of ``jaxmem record``."""
    from jaxmem.messages import unwritable_output

    problem = unwritable_output(args.out)
    if problem is not None:  # say so before running the whole program
        print(f"jaxmem record: {problem}", file=sys.stderr)
        return 2
    return _launch("record", args.command, ["--out", os.path.abspath(args.out)])


def run_tracked(args) -> int:
    """Handler of ``jaxmem run``."""
    return _launch("run", args.command, [])


def run_confirm(args) -> int:
    """Handler of ``jaxmem confirm``: the command's exit status (2: jaxmem could not start it)."""
    import tempfile

    from jaxmem.config import ConfigError
    from jaxmem.messages import unwritable_output
    from jaxmem.runtime_check.confirm_report import document, render, static_proposals

    problem = unwritable_output(args.out) if args.out else None
    program, error = _program(args.command, notebooks=True)
    if problem or error:
        print(f"jaxmem confirm: {problem or error}", file=sys.stderr)
        return 2
    script = program[1] if program[1] != "-m" else "."
    try:
        proposals = static_proposals([script])
    except (ConfigError, OSError) as error:
        print(f"jaxmem confirm: {error}", file=sys.stderr)
        return 2
    if not proposals:
        print("jaxmem confirm: the static analysis proposes no donation in this project; running the command "
              "without watching anything", file=sys.stderr)
    runs, disabled = [], set()
    with tempfile.TemporaryDirectory(prefix="jaxmem-confirm-") as folder:
        given, taken = os.path.join(folder, "proposals.json"), os.path.join(folder, "run.json")
        for _ in range(len(proposals) + 1):
            with open(given, "w", encoding="utf-8") as handle:
                json.dump({"proposals": proposals, "disabled": sorted(disabled)}, handle)
            launcher = [program[0], "-m", "jaxmem.runtime_check.launcher", "confirm", "--proposals", given,
                        "--out", taken, "--", *program[1:]]
            if os.path.exists(taken):
                os.remove(taken)
            code = subprocess.call(launcher, env=_confirm_environment())
            if not os.path.exists(taken):
                print(f"jaxmem confirm: the program ended (status {code}) before jaxmem could write its findings",
                      file=sys.stderr)
                return code or 2
            with open(taken, encoding="utf-8") as handle:
                run = json.load(handle)
            run["exit_status"] = code
            runs.append(run)
            refuted = {p["key"] for p in run["proposals"] if p["refutations"]}
            if not run["rerun"] or refuted <= disabled:
                break
            disabled |= refuted
            print("jaxmem confirm: a donated array was read after its call (see above); running the command "
                  "again without the refuted donations", file=sys.stderr)
    report = document(program[1:], runs, runs[-1]["exit_status"])
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
            handle.write("\n")
    sys.stdout.flush()
    print(render(report))
    return report["exit_status"]


def _confirm_environment() -> dict:
    """The environment of the watched command: under pytest, jaxmem's hook sees each test's error."""
    env = dict(os.environ)
    plugins = [p for p in env.get("PYTEST_PLUGINS", "").split(",") if p]
    env["PYTEST_PLUGINS"] = ",".join([*plugins, "jaxmem.runtime_check.confirm"])
    return env


def run_verify(args) -> int:
    """Handler of ``jaxmem verify``; exit 1 when a donation is unusable or a verification fails."""
    from jaxmem.messages import unwritable_output
    from jaxmem.runtime_check.config import ConfigError, load_config

    problem = unwritable_output(args.output) if args.output else None
    if problem is not None:
        print(f"jaxmem verify: {problem}", file=sys.stderr)
        return 2
    try:
        if args.record:
            from jaxmem.runtime_check.recorder import load_record
            from jaxmem.runtime_check.runs import verify_record

            record = load_record(args.record)
            try:
                outcome = _with_backend(args.backend, lambda: verify_record(record, args.backend))
            except (KeyError, TypeError, AttributeError, IndexError) as error:
                raise ValueError(f"{args.record}: not a valid jaxmem record file "
                                 f"({type(error).__name__}: {error}); record it again") from error
        else:
            config = args.config or DEFAULT_CONFIG
            if args.config is None and not os.path.exists(config):
                print(f"jaxmem verify: no {DEFAULT_CONFIG} here and no --record FILE; list functions in "
                      f"{DEFAULT_CONFIG} or record a run with `jaxmem record -- python train.py`",
                      file=sys.stderr)
                return 2
            from jaxmem.runtime_check.runs import verify_entries

            entries = load_config(config)
            base = os.path.dirname(os.path.abspath(config))
            outcome = _with_backend(args.backend, lambda: verify_entries(entries, base))
    except (ConfigError, ValueError) as error:
        print(f"jaxmem verify: {error}", file=sys.stderr)
        return 2
    document = outcome.to_dict()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
            handle.write("\n")
    if args.format == "json":
        print(json.dumps(document, indent=1))
    else:
        print(render_run(outcome))
    return 0 if outcome.ok else 1


def _with_backend(backend, action):
    if backend is None:
        return action()
    import jax

    try:
        device = jax.devices(backend)[0]
    except RuntimeError as error:
        raise ValueError(f"backend {backend!r} is not available here ({error})") from None
    with jax.default_device(device):
        return action()


def render_run(outcome) -> str:
    """The text output of ``jaxmem verify``."""
    from jaxmem.runtime_check.runs import relative
    from jaxmem.runtime_check.units import format_bytes

    blocks = []
    for report in outcome.reports:
        if report.definition_path:
            report.definition_path = relative(report.definition_path)
        text = report.render_text()
        if report.donation_sources:
            sources = ", ".join(f"{name}: {source}" for name, source in sorted(report.donation_sources.items()))
            text += f"\n  donation source: {sources}"
        blocks.append(text)
    for problem in outcome.problems:
        where = f" ({relative(problem.location)})" if problem.location else ""
        label = "FAILED" if problem.failed else "skipped"
        blocks.append(f"{problem.function}{where}: {label}: {problem.message}")
    blocks.extend(f"note: {note}" for note in outcome.notes)
    unusable = sum(len(r.unusable) for r in outcome.reports)
    failed = sum(1 for p in outcome.problems if p.failed)
    largest: dict[tuple, int] = {}
    for report in outcome.reports:
        key = (report.function, report.definition_path, report.definition_line)
        largest[key] = max(largest.get(key, 0), report.predicted_saving or 0)
    blocks.append(f"{len(outcome.reports)} verification(s) of {len(largest)} function(s), {unusable} donated "
                  f"leaf(s) not reused, {failed} failed; predicted saving {format_bytes(sum(largest.values()))} "
                  "(largest signature of each function)")
    if not outcome.reports:
        blocks.append("FAILED: nothing was verified (see above why); a run that checks nothing does not pass")
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxmem.runtime_check.commands verify|record|run ...``."""
    parser = argparse.ArgumentParser(prog="jaxmem")
    register(parser.add_subparsers(dest="subcommand", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())

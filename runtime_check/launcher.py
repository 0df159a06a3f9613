"""Run a user's program under jaxmem: ``record`` signatures, ``run`` with the tracker, ``confirm``.

Invoked as ``python -m jaxmem.runtime_check.launcher MODE [--out FILE] -- TARGET ARGS``
by the ``jaxmem record``, ``jaxmem run`` and ``jaxmem confirm`` commands, in the user's
interpreter, so the program sees the same ``sys.argv``, ``__name__ ==
"__main__"`` and ``sys.path[0]`` as under plain ``python``.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback


# jaxmem is imported before pytest starts, so pytest's assertion rewriter warns that it cannot
# rewrite jaxmem's modules (the pytest11 entry point, the confirm plugin); a project whose pytest
# config turns warnings into errors (flax: filterwarnings = ["error"]) would then not start at all.
# A command-line filter outranks the config's; it matches only that warning about jaxmem.
_PYTEST_REWRITE_NOTE = ("-W", "ignore:Module already imported so cannot be rewritten; jaxmem"
                              ":pytest.PytestAssertRewriteWarning")


def run_program(target: list[str]) -> int:
    """Run ``script.py ARGS`` or ``-m module ARGS`` as ``__main__``; return its exit code."""
    if target[0] == "-m":
        if len(target) < 2:
            print("jaxmem: '-m' needs a module name", file=sys.stderr)
            return 2
        notes = _PYTEST_REWRITE_NOTE if target[1] in ("pytest", "py.test") else ()
        sys.argv = [target[1], *notes, *target[2:]]
        runner = lambda: runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        sys.path.insert(0, os.getcwd())
    else:
        script = target[0]
        if not os.path.exists(script):
            print(f"jaxmem: {script}: no such file; give the script to run after '--'", file=sys.stderr)
            return 2
        sys.argv = list(target)
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runner = lambda: runpy.run_path(script, run_name="__main__")
    try:
        runner()
    except SystemExit as exit_:
        code = exit_.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the launcher process."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: python -m jaxmem.runtime_check.launcher record|run [--out FILE] -- script.py ARGS",
              file=sys.stderr)
        return 2
    split = argv.index("--")
    options, target = argv[:split], argv[split + 1:]
    if not options or not target:
        print("jaxmem: nothing to run after '--'", file=sys.stderr)
        return 2
    mode = options[0]
    if mode == "record":
        out = options[options.index("--out") + 1] if "--out" in options else "jaxmem-record.json"
        from jaxmem.runtime_check.recorder import recording

        with recording(out, target):
            code = run_program(target)
        print(f"jaxmem: recorded jitted calls into {out}", file=sys.stderr)
        return code
    if mode == "run":
        from jaxmem.runtime_check.tracker import DonatedArrayUsedError, track_donations

        try:
            with track_donations():
                return run_program(target)
        except DonatedArrayUsedError:
            traceback.print_exc()
            return 1
    if mode == "confirm":
        from jaxmem.runtime_check.confirm import run_confirm

        return run_confirm(target, options[options.index("--proposals") + 1], options[options.index("--out") + 1])
    print(f"jaxmem: unknown launcher mode {mode!r} (expected record, run or confirm)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""Timing of benchmark commands: wall and CPU seconds, peak memory, load, median of rounds.

Each command runs under GNU ``/usr/bin/time``, which reports the CPU time
and the peak resident set size of the command (Linux: the largest of the
command and the descendants it waited for, such as ``--jobs`` workers; not
their sum).  Not ``os.wait4`` on the command itself: Linux keeps a
process's peak across ``exec``, so a child forked from this (large)
process would report at least this process's size.  Without
``/usr/bin/time`` the figures come from ``os.wait4`` and the peak is only
an upper bound.  Cases run in alternating rounds, so a change in the
machine's load hits every case alike; the median of the rounds is what
counts.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Sample:
    """One run of one command."""

    seconds: float
    cpu_seconds: float
    max_rss_mib: float
    load: float  # 1-minute load average when the run started
    returncode: int


@dataclass
class Case:
    """A command to time, in ``group``, with what to do before each run of it."""

    group: str
    name: str
    command: list[str]
    cwd: str
    env: dict | None = None
    prepare: Callable[[int], None] | None = None  # called with the round number
    ok_codes: tuple[int, ...] = (0, 1)
    samples: list[Sample] = field(default_factory=list)
    output: str = ""  # stdout of the last run


class CommandFailed(RuntimeError):
    """A benchmarked command exited with a status it should not have."""


GNU_TIME = "/usr/bin/time"


def run_once(command: list[str], *, cwd: str, env: dict | None = None) -> tuple[Sample, str, str]:
    """Run ``command`` once; return its sample, stdout and stderr."""
    timed = os.access(GNU_TIME, os.X_OK)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as usage_file:
        prefix = [GNU_TIME, "--format", "%M %U %S", "--output", usage_file.name] if timed else []
        load = os.getloadavg()[0]
        start = time.perf_counter()
        child = subprocess.Popen([*prefix, *command], cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if timed:
            max_rss_kib, cpu_seconds = parse_gnu_time(usage_file.read())
        else:
            max_rss_kib, cpu_seconds = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
        out.seek(0)
        err.seek(0)
        sample = Sample(seconds=seconds, cpu_seconds=cpu_seconds, max_rss_mib=max_rss_kib / 1024, load=load,
                        returncode=child.returncode)
        return sample, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


def parse_gnu_time(report: str) -> tuple[int, float]:
    """Peak RSS (KiB) and CPU seconds from ``/usr/bin/time --format "%M %U %S"``'s output.

    The last line holds the figures; a line before it may say that the
    command exited with a non-zero status.
    """
    max_rss, user, system = report.strip().splitlines()[-1].split()
    return int(max_rss), float(user) + float(system)


def run_case(case: Case, round_number: int) -> Sample:
    """Prepare and run ``case`` once, keeping its sample and output."""
    if case.prepare is not None:
        case.prepare(round_number)
    sample, stdout, stderr = run_once(case.command, cwd=case.cwd, env=case.env)
    if sample.returncode not in case.ok_codes:
        raise CommandFailed(
            f"{case.group} / {case.name}: {case.command[0]} exited {sample.returncode}: "
            f"{stderr.strip()[-1000:]}"
        )
    case.samples.append(sample)
    case.output = stdout
    return sample


def run_rounds(cases: list[Case], runs: int, progress: Callable[[str], None] | None = None,
               after_round: Callable[[int], None] | None = None) -> None:
    """Run every case once per round, in the given order, for ``runs`` rounds.

    ``after_round(rounds_done)`` is called at the end of each round.
    """
    for round_number in range(max(runs, 1)):
        for case in cases:
            sample = run_case(case, round_number)
            if progress is not None:
                progress(f"round {round_number + 1}/{runs} {case.group} / {case.name}: "
                         f"{sample.seconds:.2f} s, {sample.max_rss_mib:.0f} MiB, load {sample.load:.2f}")
        if after_round is not None:
            after_round(round_number + 1)


def summary(samples: list[Sample]) -> dict:
    """Medians of ``samples`` (peak memory: the largest), with every run's seconds."""
    return {
        "seconds": round(statistics.median(s.seconds for s in samples), 3),
        "cpu_seconds": round(statistics.median(s.cpu_seconds for s in samples), 3),
        "max_rss_mib": round(max(s.max_rss_mib for s in samples), 1),
        "load": round(statistics.median(s.load for s in samples), 2),
        "all_seconds": [round(s.seconds, 3) for s in samples],
        "all_loads": [round(s.load, 2) for s in samples],
    }

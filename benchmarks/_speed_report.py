"""Ratios against issue 10's targets, and the speed figures as a text table and as Markdown."""

from __future__ import annotations

# Case names, shared by speed.py (which runs them) and the ratios below.
NO_CACHE_1 = "jaxmem check --no-cache --jobs 1"
NO_CACHE_2 = "jaxmem check --no-cache --jobs 2"
COLD = "jaxmem check, cold cache, --jobs 1"
WARM = "jaxmem check, warm cache, --jobs 1"
FLAKE8 = "flake8 defaults, -j 1"
RUFF_1 = "ruff check, 1 thread"
RUFF_ALL = "ruff check, all threads"
HOOK = "pre-commit hook: jaxmem check --force-exclude FILE"
CHECK_FILE = "jaxmem check FILE"
CHECK_PROJECT = "jaxmem check . (the whole project, warm)"
CHECK_PROJECT_MOVED = "jaxmem check . (warm, a line inserted at the top: the file's facts all move)"
FLAKE8_PLUGIN = "flake8 plugin: flake8 --select JXM FILE"
RUFF_FILE = "ruff check FILE"

JIT_HEAVY, PROJECT, INCREMENTAL = "jit-heavy files", "whole projects", "one changed file"

# Issue 10's targets: (at most | at least, value) per group.
FLAKE8_SHARE_TARGET = {JIT_HEAVY: 0.5, PROJECT: 0.33}
WARM_SHARE_TARGET = 0.05
INCREMENTAL_SECONDS_TARGET = 1.0
JOBS_SPEEDUP_TARGET = 0.85 * 2
PEAK_MIB_TARGET = 1024.0


def ratio(numerator: dict, denominator: dict, key: str = "seconds") -> float | None:
    """``numerator[key] / denominator[key]``, or None when the denominator is zero."""
    if not denominator[key]:
        return None
    return round(numerator[key] / denominator[key], 3)


def _figure(name, group, value, *, cpu=None, target=None, at_most=True, unit="", load=None) -> dict:
    met = None if target is None or value is None else (value <= target if at_most else value >= target)
    return {"name": name, "group": group, "value": value, "cpu_value": cpu, "unit": unit,
            "target": target, "at_most": at_most, "met": met, "load": load}


def _loads(*summaries: dict) -> list[float]:
    return sorted({s["load"] for s in summaries})


def target_figures(results: dict) -> list[dict]:
    """Every ratio and absolute figure issue 10 sets a target for, from ``results[group][case]``."""
    figures = []
    for group in (JIT_HEAVY, PROJECT):
        cases = results.get(group)
        if not cases:
            continue
        one, two, cold, warm = cases[NO_CACHE_1], cases[NO_CACHE_2], cases[COLD], cases[WARM]
        flake8, ruff = cases[FLAKE8], cases[RUFF_1]
        figures += [
            _figure("jaxmem / flake8 (one job, no cache)", group, ratio(one, flake8),
                    cpu=ratio(one, flake8, "cpu_seconds"), target=FLAKE8_SHARE_TARGET[group],
                    load=_loads(one, flake8)),
            _figure("jaxmem / ruff (one thread)", group, ratio(one, ruff),
                    cpu=ratio(one, ruff, "cpu_seconds"), load=_loads(one, ruff)),
            _figure("warm / cold", group, ratio(warm, cold), cpu=ratio(warm, cold, "cpu_seconds"),
                    target=WARM_SHARE_TARGET, load=_loads(warm, cold)),
            _figure("--jobs 2 speed-up", group, ratio(one, two), target=JOBS_SPEEDUP_TARGET,
                    at_most=False, unit="x", load=_loads(one, two)),
            # On a machine loaded beyond its CPUs no wall speed-up can show;
            # the extra CPU that two jobs spend is the overhead of the pool.
            _figure("--jobs 2 CPU / --jobs 1 CPU", group, ratio(two, one, "cpu_seconds"), load=_loads(one, two)),
        ]
    incremental = results.get(INCREMENTAL)
    if incremental:
        for name in (HOOK, CHECK_FILE, CHECK_PROJECT, CHECK_PROJECT_MOVED):
            if name not in incremental:
                continue  # results written before the case existed
            figures.append(_figure(name, INCREMENTAL, incremental[name]["seconds"], unit="s",
                                   cpu=incremental[name]["cpu_seconds"],
                                   target=INCREMENTAL_SECONDS_TARGET, load=_loads(incremental[name])))
        plugin = incremental.get(FLAKE8_PLUGIN)
        if plugin is not None:  # absent with --incremental-only
            figures.append(_figure(FLAKE8_PLUGIN, INCREMENTAL, plugin["seconds"], unit="s",
                                   cpu=plugin["cpu_seconds"], load=_loads(plugin)))
    peak = max((s["max_rss_mib"] for cases in results.values() for name, s in cases.items()
                if name.startswith(("jaxmem", "pre-commit", "flake8 plugin"))), default=None)
    if peak is not None:
        figures.append(_figure("peak memory of any jaxmem run", "all", peak, unit="MiB",
                               target=PEAK_MIB_TARGET))
    return figures


def _value(figure: dict, key: str = "value") -> str:
    value = figure[key]
    if value is None:
        return "-"
    if figure["unit"] == "MiB":
        return f"{value:.0f} MiB"
    if figure["unit"] == "s":
        return f"{value:.2f} s"
    return f"{value:.2f}{figure['unit']}"


def _verdict(figure: dict) -> str:
    if figure["target"] is None:
        return ""
    sign = "<=" if figure["at_most"] else ">="
    target = _value({**figure, "value": figure["target"]})
    return f"{'meets' if figure['met'] else 'MISSES'} {sign} {target}"


def _load_text(loads) -> str:
    if not loads:
        return "-"
    return f"{loads[0]:.1f}" if len(loads) == 1 else f"{loads[0]:.1f}-{loads[-1]:.1f}"


def format_table(figures: dict) -> str:
    """The medians of every case, then the target figures, as plain text."""
    rows = []
    for group, cases in figures["results"].items():
        about = figures["sets"][group]
        rows.append(f"== {group}: {about['files']} files, {about['lines']} lines ==")
        rows.append(f"{'case':<52}{'median s':>10}{'CPU s':>9}{'peak MiB':>10}{'load':>7}")
        for name, s in cases.items():
            rows.append(f"{name:<52}{s['seconds']:>10.2f}{s['cpu_seconds']:>9.2f}"
                        f"{s['max_rss_mib']:>10.0f}{s['load']:>7.2f}")
        rows.append("")
    rows.append(f"{'figure':<56}{'wall':>10}{'CPU':>10}  {'load':<9}verdict")
    for f in figures["targets"]:
        rows.append(f"{f['group'] + ': ' + f['name']:<56}{_value(f):>10}{_value(f, 'cpu_value'):>10}  "
                    f"{_load_text(f['load']):<9}{_verdict(f)}")
    rows.append(f"\nmedian of {figures['runs']} alternating round(s) on {figures['machine']['cpus']} CPUs; "
                f"load average (1 min) {figures['machine']['load_before']} before, "
                f"{figures['machine']['load_after']} after")
    for group, check in figures["findings"].items():
        rows.append(f"{group}: findings {'identical' if check['identical'] else 'DIFFER'} across "
                    f"jaxmem variants; {check['counts']}")
    return "\n".join(rows)


def format_markdown(figures: dict) -> str:
    """The figures as the dated Markdown report in ``benchmarks/results/``."""
    machine, versions = figures["machine"], figures["versions"]
    lines = [
        f"# jaxmem speed, {figures['date']}",
        "",
        f"Command: `{figures['command']}` (median of {figures['runs']} alternating round(s)).",
        "",
        f"Machine: {machine['cpus']} CPUs, {machine['platform']}, shared with other work: load average "
        f"(1, 5, 15 min) {machine['load_before']} before, {machine['load_after']} after; each figure "
        "below carries the 1-minute load when its runs started.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if k != "baseline flake8 --version"),
        "",
        "Corpus (pinned wheels from PyPI): " + ", ".join(figures["packages"]) + ".",
        "",
        "## Targets (issue 10)",
        "",
        "| set | figure | wall | CPU | load | target |",
        "|---|---|---|---|---|---|",
    ]
    for f in figures["targets"]:
        lines.append(f"| {f['group']} | {f['name']} | {_value(f)} | {_value(f, 'cpu_value')} | "
                     f"{_load_text(f['load'])} | {_verdict(f)} |")
    lines.append("")
    for group, cases in figures["results"].items():
        about = figures["sets"][group]
        lines += [f"## {group}", "", about["description"], "",
                  f"{about['files']} files, {about['lines']:,} lines.", "",
                  "| case | median s | CPU s | peak MiB | load | all runs (s) |", "|---|---|---|---|---|---|"]
        for name, s in cases.items():
            lines.append(f"| {name} | {s['seconds']:.2f} | {s['cpu_seconds']:.2f} | {s['max_rss_mib']:.0f} | "
                         f"{s['load']:.2f} | {', '.join(f'{t:.2f}' for t in s['all_seconds'])} |")
        lines.append("")
        check = figures["findings"].get(group)
        if check:
            lines += [f"Findings: {check['counts']}; identical across the jaxmem variants: "
                      f"{'yes' if check['identical'] else 'NO'}.", ""]
    lines += ["## Commands", ""]
    for name, command in figures["commands"].items():
        lines.append(f"* {name}: `{command}`")
    return "\n".join(lines) + "\n"

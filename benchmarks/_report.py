"""The accuracy benchmark's summary: figures against the issue's targets, as a table and as Markdown."""

from __future__ import annotations

import collections

from _scoring import ratio, refusal_category, tally_reasons

TARGETS = {
    "recall_any": 0.95,          # check reports the stripped donations, any confidence
    "fix_rebound": 0.80,         # default jaxmem-fix restores those rebound by the call
    "injected_jxm101": 0.95,     # JXM101 on injected reads
    "high_jxm001_right": 0.95,   # reviewed high-confidence JXM001 right
    "jxm101_real_bug": 0.90,     # reviewed JXM101 on unmodified code real bugs
}
MODES = ("fix", "unsafe-fix")


def summarize(report: dict) -> dict:
    """The headline figures of ``report`` (counts, ratios, the cases behind each miss)."""
    summary = {}
    differing = {
        package: {setting: len(d["missing"]) + len(d["extra"]) for setting, d in entry["differences"].items()}
        for package, entry in report["exactness"].items()
    }
    unique = {
        (package, side, tuple(identity))
        for package, entry in report["exactness"].items()
        for d in entry["differences"].values() for side in ("missing", "extra") for identity in d[side]
    }
    summary["exactness"] = {
        "packages": len(differing),
        # a finding that differs in several settings counts once
        "differences": len(unique),
        "by_package": {p: v for p, v in differing.items() if any(v.values())},
    }
    resolved = [c for c in report["recall"] if c["resolution"] == "resolved"]
    recall = {"donations": len({(c["package"], c["path"], c["line"]) for c in report["recall"]}),
              "parameters": len(resolved),
              "unresolved": len([c for c in report["recall"] if c["resolution"] != "resolved"])}
    for status in ("all", "rebound", "not-rebound", "no-call-site"):
        group = [c for c in resolved if status == "all" or c["status"] == status]
        reported = [c for c in group if c["reported"]]
        recall[status] = {
            "parameters": len(group),
            "reported": len(reported), "reported_ratio": ratio(len(reported), len(group)),
            "jxm001": len([c for c in group if c["reported"] == "JXM001"]),
            "jxm003": len([c for c in group if c["reported"] == "JXM003"]),
            "high": len([c for c in group if c["confidence"] == "high"]),
            "restored_by_fix": len([c for c in group if c["restored_by_fix"]]),
            "fix_ratio": ratio(len([c for c in group if c["restored_by_fix"]]), len(group)),
            "restored_by_unsafe_fix": len([c for c in group if c["restored_by_unsafe_fix"]]),
            # not reported, with jaxmem's reason that donating frees nothing (scalars, unused)
            "not_worth": len([c for c in group if not c["reported"]
                              and (c.get("refusal") or "").startswith("not worth donating")]),
        }
    summary["recall"] = recall
    summary["uncalled"] = uncalled_summary(report)
    rebound = [c for c in resolved if c["status"] == "rebound"]
    held_back = [c for c in rebound if c["reported"] and c["confidence"] != "high"]
    summary["rebound_confidence"] = {
        level: len([c for c in rebound if (c["confidence"] or "not reported") == level])
        for level in ("high", "medium", "low", "not reported")
    }
    summary["rebound_reasons"] = tally_reasons(held_back)
    summary["rebound_reasons_cases"] = len(held_back)
    unreported = [c for c in rebound if not c["reported"]]
    refusals = collections.Counter(refusal_category(c["refusal"]) if c.get("refusal") else "no reason given"
                                   for c in unreported)
    summary["rebound_refusals"] = sorted(refusals.items(), key=lambda item: (-item[1], item[0]))
    summary["fixed_point"] = fixed_point_summary(report.get("fixed_point", {}))
    injection = {}
    for variant in ("direct", "alias"):
        group = [c for c in report["injection"] if c["variant"] == variant]
        hits = [c for c in group if c["reported"]]
        injection[variant] = {"reads": len(group), "jxm101": len(hits), "ratio": ratio(len(hits), len(group))}
    all_reads = report["injection"]
    injection["all"] = {"reads": len(all_reads), "jxm101": len([c for c in all_reads if c["reported"]]),
                        "ratio": ratio(len([c for c in all_reads if c["reported"]]), len(all_reads))}
    summary["injection"] = injection
    review = report.get("review", {})
    seen = review.get("reviewed_still_reported", [])
    high = [c for c in seen if c["code"] == "JXM001" and c["confidence"] == "high"]
    jxm101 = [c for c in seen if c["code"] == "JXM101"]
    summary["precision"] = {
        "candidates": len(report["precision_candidates"]),
        "reviewed_still_reported": len(seen),
        "reviewed_gone": len(review.get("reviewed_gone", [])),
        "unreviewed": len(review.get("unreviewed", [])),
        "high_jxm001": {v: len([c for c in high if c["verdict"] == v]) for v in ("right", "useless", "unsafe")},
        "high_jxm001_right_ratio": ratio(len([c for c in high if c["verdict"] == "right"]), len(high)),
        "all_jxm001": {v: len([c for c in seen if c["code"] == "JXM001" and c["verdict"] == v])
                       for v in ("right", "useless", "unsafe")},
        "jxm101": {v: len([c for c in jxm101 if c["verdict"] == v]) for v in ("right", "wrong")},
        "jxm101_real_ratio": ratio(len([c for c in jxm101 if c["verdict"] == "right"]), len(jxm101)),
    }
    run = report.get("fix_then_run")
    if run:
        summary["fix_then_run"] = run["summary"]
    confirmed = report.get("confirm_then_fix")
    if confirmed:
        summary["confirm_then_fix"] = confirmed["summary"]
    return summary


def uncalled_summary(report: dict) -> dict | None:
    """JXM003 counts: on the unmodified code, and on the stripped code split by whether each names a
    donation the authors wrote; None for a results file from before JXM003."""
    if "uncalled_unmodified" not in report:
        return None
    stripped = report.get("uncalled_stripped", [])
    authored = len([c for c in stripped if c["authored"]])
    return {"unmodified": len(report["uncalled_unmodified"]), "stripped": len(stripped),
            "stripped_authored": authored, "stripped_ratio": ratio(authored, len(stripped))}


def fixed_point_summary(fixed_point: dict) -> dict:
    """Per fixer mode: files looked at, files the first run changed, files the second run changed (listed)."""
    out = {}
    for mode in MODES:
        runs = {label: modes[mode] for label, modes in fixed_point.items() if mode in modes}
        out[mode] = {
            "files": sum(r["files"] for r in runs.values()),
            "changed_by_first": sum(len(r["changed_by_first"]) for r in runs.values()),
            "changed_by_second": [f"{label}/{c['path']}" for label, r in runs.items() for c in r["changed_by_second"]],
            "errors": [f"{label}: {e}" for label, r in runs.items() for e in r["errors"]],
        }
    return out


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _rows(report: dict) -> list[tuple[str, str, str, str]]:
    s = report["summary"]
    rec, inj, pre = s["recall"], s["injection"], s["precision"]
    rows = [
        ("shortcuts exact (findings that differ)", str(s["exactness"]["differences"]), "0",
         "ok" if s["exactness"]["differences"] == 0 else "MISSED"),
        ("recall: check reports stripped donations",
         f"{rec['all']['reported']}/{rec['all']['parameters']} ({_pct(rec['all']['reported_ratio'])})",
         ">= 95%", _verdict(rec["all"]["reported_ratio"], TARGETS["recall_any"])),
        ("  not reported: jaxmem says donating frees nothing (scalars, unused)",
         str(rec["all"].get("not_worth", 0)), "", ""),
        ("recall: default fix restores (rebound by call)",
         f"{rec['rebound']['restored_by_fix']}/{rec['rebound']['parameters']} ({_pct(rec['rebound']['fix_ratio'])})",
         ">= 80%", _verdict(rec["rebound"]["fix_ratio"], TARGETS["fix_rebound"])),
        ("recall: check reports them (rebound by call)",
         f"{rec['rebound']['reported']}/{rec['rebound']['parameters']} ({_pct(rec['rebound']['reported_ratio'])})",
         "", ""),
        ("  confidence of the rebound ones", ", ".join(f"{k} {v}" for k, v in s["rebound_confidence"].items()),
         "", ""),
        ("  reported only by JXM003 (no call site seen)", str(rec["all"].get("jxm003", 0)), "", ""),
        ("recall: check reports them (no call site in the file)",
         f"{rec['no-call-site']['reported']}/{rec['no-call-site']['parameters']} "
         f"({_pct(rec['no-call-site']['reported_ratio'])})", "", ""),
        ("recall: default fix restores (all)",
         f"{rec['all']['restored_by_fix']}/{rec['all']['parameters']} ({_pct(rec['all']['fix_ratio'])})", "", ""),
        ("use-after-donation: JXM101 on injected reads",
         f"{inj['all']['jxm101']}/{inj['all']['reads']} ({_pct(inj['all']['ratio'])})", ">= 95%",
         _verdict(inj["all"]["ratio"], TARGETS["injected_jxm101"])),
        ("  direct read after a non-rebinding call",
         f"{inj['direct']['jxm101']}/{inj['direct']['reads']} ({_pct(inj['direct']['ratio'])})", "", ""),
        ("  read through an alias taken before",
         f"{inj['alias']['jxm101']}/{inj['alias']['reads']} ({_pct(inj['alias']['ratio'])})", "", ""),
        ("precision: reviewed high JXM001 right",
         f"{pre['high_jxm001']['right']}/{sum(pre['high_jxm001'].values())} ({_pct(pre['high_jxm001_right_ratio'])})",
         ">= 95%", _verdict(pre["high_jxm001_right_ratio"], TARGETS["high_jxm001_right"])),
        ("precision: reviewed JXM101 real bugs",
         f"{pre['jxm101']['right']}/{sum(pre['jxm101'].values())} ({_pct(pre['jxm101_real_ratio'])})",
         ">= 90%", _verdict(pre["jxm101_real_ratio"], TARGETS["jxm101_real_bug"])),
        ("precision: unreviewed candidates", str(pre["unreviewed"]), "0", ""),
    ]
    uncalled = s.get("uncalled")
    if uncalled is not None:
        rows.append(("JXM003 (no call site) on unmodified code", str(uncalled["unmodified"]), "", ""))
        rows.append(("  on stripped code: a written donation / all",
                     f"{uncalled['stripped_authored']}/{uncalled['stripped']} ({_pct(uncalled['stripped_ratio'])})",
                     "", ""))
    fixed = s.get("fixed_point")
    if fixed and any(fixed[m]["files"] for m in MODES):
        second = [len(fixed[m]["changed_by_second"]) for m in MODES]
        rows.append(("fixed point: files a 2nd jaxmem-fix changes (default / unsafe)",
                     f"{second[0]} / {second[1]} of {fixed['fix']['files']}", "0",
                     "ok" if not any(second) else "MISSED"))
        rows.append(("  files the 1st run changed (default / unsafe)",
                     f"{fixed['fix']['changed_by_first']} / {fixed['unsafe-fix']['changed_by_first']}", "", ""))
    run = s.get("fix_then_run")
    if run:
        rows.append(("fix-then-run: unsafe fixes (default / unsafe)",
                     f"{run['unsafe']['fix']} / {run['unsafe']['unsafe-fix']}", "0 (default)",
                     "ok" if run["unsafe"]["fix"] == 0 else "MISSED"))
        rows.append(("fix-then-run: ran the same before and after",
                     f"{run['same']['fix']} / {run['same']['unsafe-fix']} of {run['runs']['fix']} / "
                     f"{run['runs']['unsafe-fix']}", "", ""))
    confirmed = s.get("confirm_then_fix")
    if confirmed:
        rows.append(("confirm-then-fix: donations added (default + verified / default)",
                     f"{confirmed['verified_fix_donations']} / {confirmed['default_fix_donations']}", "", ""))
        rows.append(("confirm-then-fix: unsafe fixes (runs after the verified fix)",
                     f"{confirmed['unsafe']} of {confirmed['runs']}", "0", "ok" if not confirmed["unsafe"] else "MISSED"))
    return rows


def _verdict(value, target) -> str:
    if value is None:
        return "n/a"
    return "ok" if value >= target else "MISSED"


def format_table(report: dict) -> str:
    """The plain-text summary printed to stdout."""
    report["summary"] = summarize(report)
    rows = [("measure", "figure", "target", "")] + _rows(report)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    packages = [p for p in report["packages"] if "error" not in p]
    lines += ["", reasons_table(report["summary"])]
    lines.append("")
    lines.append(f"{len(packages)} packages, {sum(p['files'] for p in packages)} files, "
                 f"{sum(p['lines'] for p in packages):,} lines, {sum(p['donations'] for p in packages)} "
                 f"written donations; {report['seconds']} s")
    return "\n".join(lines)


def reasons_table(summary: dict) -> str:
    """The tally of what kept rebound donations from high confidence, as plain text."""
    reasons = summary["rebound_reasons"]
    lines = [f"Why rebound donations are not high ({summary['rebound_reasons_cases']} reported below high; "
             "a case counts once per reason, most have several):"]
    width = max([len(r) for r, _ in reasons] + [6])
    lines += [f"  {count:4d}  {reason.ljust(width)}".rstrip() for reason, count in reasons] or ["  none"]
    if summary.get("rebound_refusals"):
        lines.append("Why rebound donations are not reported (the `skipped` reason jaxmem gave, if any):")
        lines += [f"  {count:4d}  {reason}" for reason, count in summary["rebound_refusals"]]
    return "\n".join(lines)


def format_comparison(before: dict, after: dict) -> str:
    """Headline figures and the medium-reason tally of two results files side by side (plain text)."""
    b, a = summarize(before), summarize(after)
    left, right = dict((r[0], r[1]) for r in _rows({**before, "summary": b})), _rows({**after, "summary": a})
    rows = [("measure", f"before ({before['date']})", f"after ({after['date']})", "target")]
    rows += [(name, left.get(name, "-"), figure, target) for name, figure, target, _ in right]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts_b, counts_a = dict(b["rebound_reasons"]), dict(a["rebound_reasons"])
    names = sorted(set(counts_b) | set(counts_a), key=lambda n: (-counts_a.get(n, 0), -counts_b.get(n, 0), n))
    lines += ["", f"Why rebound donations are not high: before ({b['rebound_reasons_cases']} cases) / "
              f"after ({a['rebound_reasons_cases']} cases)"]
    lines += [f"  {counts_b.get(n, 0):4d} {counts_a.get(n, 0):4d}  {n}" for n in names] or ["  none"]
    return "\n".join(lines)


def format_markdown(report: dict) -> str:
    """The dated Markdown summary: the table, then the cases behind every miss."""
    s = report.get("summary") or summarize(report)
    out = [f"# jaxmem accuracy, {report['date']}", "", f"Command: `{report['command']}`", ""]
    out.append("| package | kind | files | lines | written donations |")
    out.append("|---|---|---|---|---|")
    for p in report["packages"]:
        if "error" in p:
            out.append(f"| {p['package']} | {p['kind']} | - | - | download failed |")
        else:
            out.append(f"| {p['package']} | {p['kind']} | {p['files']} | {p['lines']:,} | {p['donations']} |")
    out += ["", "| measure | figure | target | |", "|---|---|---|---|"]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in _rows(report)]
    out += ["", "## 1. Shortcut exactness", ""] + format_exactness(report)
    out += ["", "## 2. Recall: stripped donations not reported", ""]
    for c in report["recall"]:
        if c["resolution"] == "resolved" and not c["reported"]:
            refusal = f"; skipped: {c['refusal']}" if c.get("refusal") else ""
            out.append(f"- {c['package']} `{c['path']}:{c['line']}` {c['callee']} `{c['function']}` "
                       f"param {c['parameter'] or c['parameter_index']} ({c['status']}){refusal}")
    out += ["", "Rebound by the call but not restored by the default `jaxmem-fix`:", ""]
    for c in report["recall"]:
        if c["resolution"] == "resolved" and c["status"] == "rebound" and not c["restored_by_fix"]:
            refusal = f"; skipped: {c['refusal']}" if c.get("refusal") else ""
            out.append(f"- {c['package']} `{c['path']}:{c['line']}` `{c['function']}` param "
                       f"{c['parameter'] or c['parameter_index']}: reported {c['reported']} ({c['confidence']})"
                       f"{refusal}")
    out += ["", "### Why rebound donations are not high", "",
            f"{s['rebound_reasons_cases']} rebound donations reported below high confidence; confidence of all "
            f"rebound ones: {', '.join(f'{k} {v}' for k, v in s['rebound_confidence'].items())}. A case counts "
            "once per reason (from the finding's evidence, names and lines normalised).", "",
            "| cases | reason |", "|---|---|"]
    out += [f"| {count} | {reason} |" for reason, count in s["rebound_reasons"]]
    if s.get("rebound_refusals"):
        out += ["", "Rebound donations not reported, by the reason jaxmem's `skipped` list gives:", "",
                "| cases | reason |", "|---|---|"]
        out += [f"| {count} | {reason} |" for reason, count in s["rebound_refusals"]]
    out += ["", "Each rebound case below high, with its doubts as jaxmem wrote them:", ""]
    for c in report["recall"]:
        if c["resolution"] == "resolved" and c["status"] == "rebound" and c["reported"] and c["confidence"] != "high":
            doubts = "; ".join(c.get("doubts") or ["(none given)"])
            out.append(f"- {c['package']} `{c['path']}:{c['line']}` `{c['function']}` param "
                       f"{c['parameter'] or c['parameter_index']} ({c['confidence']}): {doubts}")
    out += ["", "Not measured (spec not literal or signature not visible):", ""]
    for c in report["recall"]:
        if c["resolution"] != "resolved":
            out.append(f"- {c['package']} `{c['path']}:{c['line']}` {c['keyword']}={c['spec']}")
    out += ["", "## 3. Injected reads without JXM101", ""]
    for c in report["injection"]:
        if not c["reported"]:
            out.append(f"- {c['package']} `{c['path']}` {c['variant']}: read of `{c['name']}` at line "
                       f"{c['read_line']} (injected) after the call at original line {c['call_line']}")
    fixed = s.get("fixed_point")
    if fixed and any(fixed[m]["files"] for m in MODES):
        out += ["", "## 2b. Fixed point: a second jaxmem-fix on the first one's output", "",
                "On the stripped copy of every package (`jaxmem-fix [--unsafe-fixes] .` twice, facts cache on).", "",
                "| mode | files | changed by the 1st run | changed by the 2nd run |", "|---|---|---|---|"]
        for mode in MODES:
            f = fixed[mode]
            out.append(f"| {mode} | {f['files']} | {f['changed_by_first']} | {len(f['changed_by_second'])} |")
        for label, modes in report.get("fixed_point", {}).items():
            for mode in MODES:
                for change in modes.get(mode, {}).get("changed_by_second", []):
                    first = change["lines"][0] if change["lines"] else None
                    detail = (f"line {first['line']}: `{first['before'].strip()[:120]}` -> "
                              f"`{first['after'].strip()[:120]}`" if first else change["what"])
                    out.append(f"- {mode}: {label} `{change['path']}` ({len(change['lines'])} hunk(s)); {detail}")
        for mode in MODES:
            for error in fixed[mode]["errors"]:
                out.append(f"- {mode}: jaxmem-fix failed: {error}")
    run = report.get("fix_then_run")
    if run:
        changed = run["summary"]["changed_files"]
        out += ["", "## 4. Fix-then-run", "",
                f"Tests/examples changed: {changed['fix']} by the default fix, {changed['unsafe-fix']} with "
                f"--unsafe-fixes; {run['summary']['sampled']} ran before and after.", "",
                "| package | file | fix | before | after | verdict |", "|---|---|---|---|---|---|"]
        for case in run["cases"]:
            out.append(f"| {case['package']} | `{case['path']}` | {case['mode']} | {case['before']} | "
                       f"{case['after']} | {case['verdict']} |")
        out.append("")
        for case in run["cases"]:
            if case.get("verdict") not in (None, "same"):
                out.append(f"- {case['verdict']}: {case['package']} `{case['path']}` {case['mode']}: "
                           f"{case.get('evidence', '')}")
    confirmed = report.get("confirm_then_fix")
    if confirmed:
        summary = confirmed["summary"]
        out += ["", "## 4b. Confirm-then-fix", "",
                "`jaxmem-fix` first; then the tests that exercise proposals, each under `jaxmem confirm`; then "
                "`jaxmem-fix --verified` with every report; then each test again on the fixed copy.", "",
                "Proposals by static confidence and run outcome: "
                + ", ".join(f"{k} {v}" for k, v in summary["proposals"].items()) + ".", "",
                f"Donation keywords added: {summary['verified_fix_donations']} by the default fix and then the "
                f"verified fix, {summary['default_fix_donations']} by the default fix alone. Runs after both: "
                f"{summary['same']} same, {summary['unsafe']} unsafe, {summary['broke']} broke, of {summary['runs']}.",
                "", "| package | file | under confirm | after the verified fix | verdict |", "|---|---|---|---|---|"]
        for case in confirmed["cases"]:
            out.append(f"| {case['package']} | `{case['path']}` | {case['under_confirm']} | {case['after']} | "
                       f"{case['verdict']} |")
        out += ["", "| package | definition | parameter | confidence | outcome |", "|---|---|---|---|---|"]
        for project in confirmed["projects"]:
            for proposal in project["proposals"]:
                if proposal["outcome"] != "not observed":
                    out.append(f"| {project['package']} | `{proposal['definition']}` | `{proposal['parameter']}` | "
                               f"{proposal['confidence']} | {proposal['outcome']} |")
    if report.get("uncalled_unmodified") is not None:
        out += ["", "## 2d. JXM003 (no call site) on unmodified code", "",
                "Each JXM003 of `jaxmem check` on the code as published (a donation the authors wrote is "
                "there, so none of these is one); then those on the stripped code that name a stripped donation.",
                ""]
        for c in report["uncalled_unmodified"]:
            out.append(f"- {c['package']} `{c['path']}:{c['line']}` param {c['parameter'] or c['parameter_index']}")
        out += ["", "On the stripped code, naming a donation the authors wrote:", ""]
        for c in report.get("uncalled_stripped", []):
            if c["authored"]:
                out.append(f"- {c['package']} `{c['path']}:{c['line']}` param "
                           f"{c['parameter'] or c['parameter_index']}")
    review = report.get("review", {})
    out += ["", "## 5. Precision (reviewed sample)", "", f"Review file: {review.get('file')}", ""]
    for c in review.get("reviewed_still_reported", []):
        out.append(f"- {c['verdict']}: {c['package']} `{c['path']}:{c['line']}` {c['code']} "
                   f"`{c.get('parameter')}` ({c['confidence']}): {c['reason']}")
    if review.get("unreviewed"):
        out += ["", f"{len(review['unreviewed'])} unreviewed candidates (listed in the JSON)."]
    return "\n".join(out) + "\n"


def format_exactness(report: dict) -> list[str]:
    """Section 1 as Markdown lines: every finding that differs, with the settings it differs in."""
    out = []
    if not (report.get("summary") or summarize(report))["exactness"]["by_package"]:
        out.append("No difference in any package.")
    for package, entry in report["exactness"].items():
        settings_of: dict[tuple, list[str]] = {}
        for setting, diff in entry["differences"].items():
            for side in ("missing", "extra"):
                for identity in diff[side]:
                    settings_of.setdefault((side, tuple(identity)), []).append(setting)
        for (side, identity), settings in settings_of.items():
            code, path, line, col, message, confidence = identity
            out.append(f"- {package} `{path}:{line}:{col}` {code} ({confidence}) {side} with "
                       f"{', '.join(settings)} (present only {'without' if side == 'missing' else 'with'} "
                       f"shortcuts): {message}")
    return out

"""A structural check of a SARIF 2.1.0 log: the properties the OASIS schema
requires, the enumerations it allows, and what GitHub code scanning needs
(rule ids, levels, 1-based regions, relative URIs with a base id)."""

from __future__ import annotations

from urllib.parse import urlsplit

LEVELS = {"none", "note", "warning", "error"}


def problems(log: dict) -> list[str]:
    """Every way ``log`` departs from SARIF 2.1.0's required shape (empty when valid)."""
    found: list[str] = []

    def need(condition, where: str, what: str) -> bool:
        if not condition:
            found.append(f"{where}: {what}")
        return bool(condition)

    need(log.get("version") == "2.1.0", "log", "version must be '2.1.0'")
    need(isinstance(log.get("$schema", ""), str), "log", "$schema must be a string")
    if not need(isinstance(log.get("runs"), list), "log", "runs must be an array"):
        return found
    for r, run in enumerate(log["runs"]):
        where = f"runs[{r}]"
        driver = run.get("tool", {}).get("driver")
        if not need(isinstance(driver, dict), where, "tool.driver is required"):
            continue
        need(isinstance(driver.get("name"), str) and driver["name"], where, "driver.name required")
        rules = driver.get("rules", [])
        need(isinstance(rules, list), where, "driver.rules must be an array")
        ids = []
        for i, rule in enumerate(rules):
            rwhere = f"{where}.tool.driver.rules[{i}]"
            need(isinstance(rule.get("id"), str), rwhere, "id required")
            ids.append(rule.get("id"))
            for key in ("shortDescription", "fullDescription", "help"):
                if key in rule:
                    need(isinstance(rule[key].get("text"), str), rwhere, f"{key}.text required")
            level = rule.get("defaultConfiguration", {}).get("level", "warning")
            need(level in LEVELS, rwhere, f"defaultConfiguration.level {level!r} not allowed")
        need(len(ids) == len(set(ids)), where, "rule ids must be unique")
        bases = run.get("originalUriBaseIds", {})
        for name, base in bases.items():
            need(base.get("uri", "").endswith("/"), where, f"base {name} uri must end with /")
        need(run.get("columnKind", "unicodeCodePoints") in {"utf16CodeUnits",
             "unicodeCodePoints"}, where, "columnKind not allowed")
        if not need(isinstance(run.get("results", []), list), where, "results must be an array"):
            continue
        for k, result in enumerate(run.get("results", [])):
            rwhere = f"{where}.results[{k}]"
            need(isinstance(result.get("message", {}).get("text"), str), rwhere,
                 "message.text required")
            need(result.get("level", "warning") in LEVELS, rwhere, "level not allowed")
            index = result.get("ruleIndex")
            if index is not None:
                in_range = isinstance(index, int) and 0 <= index < len(rules)
                if need(in_range, rwhere, "ruleIndex out of range"):
                    need(rules[index]["id"] == result.get("ruleId"), rwhere,
                         "ruleIndex must point at ruleId's descriptor")
            need(result.get("ruleId") in ids, rwhere, "ruleId has no rule descriptor")
            fingerprints = result.get("partialFingerprints", {})
            need(all(isinstance(v, str) for v in fingerprints.values()), rwhere,
                 "partialFingerprints values must be strings")
            locations = result.get("locations", [])
            need(locations, rwhere, "GitHub needs at least one location")
            for location in locations + result.get("relatedLocations", []):
                _check_physical(location.get("physicalLocation", {}), bases, rwhere, need)
    return found


def _check_physical(physical: dict, bases: dict, where: str, need) -> None:
    artifact = physical.get("artifactLocation", {})
    uri = artifact.get("uri")
    if need(isinstance(uri, str) and uri, where, "artifactLocation.uri required"):
        parts = urlsplit(uri)
        if parts.scheme:
            need(parts.scheme == "file", where, f"absolute uri {uri!r} must be file:")
        else:
            need(artifact.get("uriBaseId") in bases, where,
                 f"relative uri {uri!r} needs a uriBaseId from originalUriBaseIds")
            need(" " not in uri, where, "uri must be percent-encoded")
    region = physical.get("region", {})
    need(isinstance(region.get("startLine"), int) and region["startLine"] >= 1, where,
         "region.startLine must be >= 1")
    for key in ("startColumn", "endColumn", "endLine"):
        if key in region:
            need(isinstance(region[key], int) and region[key] >= 1, where, f"{key} must be >= 1")
    if "endLine" in region:
        need(region["endLine"] >= region["startLine"], where, "endLine before startLine")
        if region["endLine"] == region["startLine"] and "endColumn" in region:
            need(region["endColumn"] >= region.get("startColumn", 1), where,
                 "endColumn before startColumn")

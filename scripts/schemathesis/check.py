#!/usr/bin/env python3
"""Judges a schemathesis run against the simulator (scripts/schemathesis.sh).

Reads schemathesis' NDJSON event report and the list of known divergences
(scripts/schemathesis/known.yaml: how real Arcane 2.8.x answers unlike its own OpenAPI
document, each with the Arcane source that shows it). Every failed check whose response
matches a known entry is counted under it; any other failed check is a divergence of the
simulator and fails the run. Tool errors (an operation schemathesis could not test) fail it
too, so a green run means every selected operation was checked.

Prints a summary (operations, test cases, checks run, failures per known entry, the new ones
with a curl line to reproduce each) and exits 0 (no new divergence), 1 (new divergences or
tool errors) or 2 (the report or the known list cannot be read).
"""

from __future__ import annotations

import base64
import collections
import json
import re
import shlex
import sys

import yaml

MATCH_KEYS = {"operation", "code", "check", "status", "content_type", "message", "body"}


def load_known(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        entries = yaml.safe_load(f)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of entries")
    for i, e in enumerate(entries):
        where = f"{path}: entry {i + 1}"
        for key in ("id", "section", "source", "why", "match"):
            if not e.get(key):
                raise ValueError(f"{where}: `{key}` is required")
        unknown = set(e["match"]) - MATCH_KEYS
        if unknown:
            raise ValueError(f"{where} ({e['id']}): unknown match keys {sorted(unknown)}")
        for key in ("operation", "message", "body", "content_type"):
            if key in e["match"]:
                e["match"][key] = re.compile(e["match"][key], re.S)
        status = e["match"].get("status")
        if status is not None and not isinstance(status, list):
            e["match"]["status"] = [status]
    return entries


def matches(entry: dict, failure: dict) -> bool:
    m = entry["match"]
    if "code" in m and m["code"] != failure["code"]:
        return False
    if "check" in m and m["check"] != failure["check"]:
        return False
    if "status" in m and failure["status"] not in m["status"]:
        return False
    for key in ("operation", "message", "body"):
        if key in m and not m[key].search(failure[key]):
            return False
    if "content_type" in m and not m["content_type"].fullmatch(failure["content_type"] or ""):
        return False
    return True


def failures_of(report: str):
    """Yields (failure, scenario-level info) from the NDJSON report, and collects the rest."""
    stats = {
        "operations": set(),
        "cases": 0,
        "checks": collections.Counter(),
        "errors": [],
        "running_time": None,
        "selected": None,
    }
    found = []
    with open(report, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            if "LoadingFinished" in event:
                ops = event["LoadingFinished"]["statistic"]["operations"]
                stats["selected"] = ops["selected"]
            elif "NonFatalError" in event:
                e = event["NonFatalError"]
                stats["errors"].append(f"{e.get('label')}: {e['value'].get('message')}")
            elif "EngineFinished" in event:
                stats["running_time"] = event["EngineFinished"]["running_time"]
            elif "ScenarioFinished" in event:
                rec = event["ScenarioFinished"]["recorder"]
                checks = rec.get("checks") or {}
                if checks:
                    stats["operations"].add(rec["label"])
                for case_id, results in checks.items():
                    stats["cases"] += 1
                    inter = rec["interactions"].get(case_id) or {}
                    req = inter.get("request") or {}
                    resp = inter.get("response") or {}
                    body = b""
                    content = resp.get("content") or {}
                    if "$base64" in content:
                        body = base64.b64decode(content["$base64"])
                    ctype = (resp.get("headers", {}).get("content-type") or [None])[0]
                    for r in results:
                        stats["checks"][(r["name"], r["status"])] += 1
                        if r["status"] != "failure":
                            continue
                        fi = r["failure_info"]["failure"]
                        found.append(
                            {
                                "operation": fi["operation"],
                                "code": fi["code"],
                                "check": r["name"],
                                "title": fi["title"],
                                "message": fi["message"],
                                "status": resp.get("status_code"),
                                "content_type": ctype,
                                "body": body.decode("utf-8", "replace"),
                                "request": req,
                            }
                        )
    return found, stats


def curl(req: dict) -> str:
    parts = ["curl", "-X", req.get("method", "GET")]
    for name, values in (req.get("headers") or {}).items():
        for v in values:
            if name == "X-API-Key":
                v = "arcane-sim-key"
            elif v == "[Filtered]":
                continue  # a credential schemathesis masked in its report
            parts += ["-H", f"{name}: {v}"]
    body = req.get("body") or {}
    if "$base64" in body:
        parts += ["--data-binary", base64.b64decode(body["$base64"]).decode("utf-8", "replace")]
    parts.append(req.get("uri", "?"))
    return shlex.join(parts)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: check.py REPORT.ndjson known.yaml", file=sys.stderr)
        return 2
    try:
        known = load_known(argv[2])
        found, stats = failures_of(argv[1])
    except (OSError, ValueError, yaml.YAMLError, json.JSONDecodeError, KeyError) as e:
        print(f"schemathesis check: cannot read the run: {e}", file=sys.stderr)
        return 2

    per_known = collections.Counter()
    new = []
    for failure in found:
        entry = next((e for e in known if matches(e, failure)), None)
        if entry is None:
            new.append(failure)
        else:
            per_known[entry["id"]] += 1

    ran = sum(n for (name, status), n in stats["checks"].items() if status in ("success", "failure"))
    by_check = collections.Counter()
    for (name, status), n in stats["checks"].items():
        by_check[name] += n
    secs = stats["running_time"]
    print("== schemathesis against arcane-sim")
    print(f"operations: {len(stats['operations'])} checked of {stats['selected']} selected")
    print(f"test cases: {stats['cases']}; checks run: {ran} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(by_check.items()))})")
    if secs is not None:
        print(f"schemathesis time: {secs:.1f} s")
    print(f"failed checks: {len(found)}; known divergences of Arcane: {len(found) - len(new)}; "
          f"new: {len(new)}")
    for e in known:
        print(f"  known {e['id']:<34} {per_known[e['id']]:>5}  (docs/arcane-wire.md#{e['section']})")

    groups = collections.defaultdict(list)
    for f in new:
        groups[(f["operation"], f["code"], f["status"], f["content_type"])].append(f)
    for (op, code, status, ctype), fs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        f = fs[0]
        print(f"\nNEW {code} {f['title']}: {op} -> {status} {ctype} ({len(fs)}x)")
        print("  " + f["message"].strip().replace("\n", "\n  ")[:1500])
        print(f"  body: {f['body'][:300]}")
        print(f"  reproduce: {curl(f['request'])}")
    for err in stats["errors"]:
        print(f"\nTOOL ERROR {err}")

    # One line per run in the form CI's log reader counts: operations without a new divergence
    # or tool error passed.
    bad_ops = {f["operation"] for f in new} | {e.split(":", 1)[0] for e in stats["errors"]}
    closing = f"schemathesis: {len(stats['operations'] - bad_ops)} passed, {len(bad_ops)} failed"

    if new or stats["errors"]:
        print(f"\nFAILED: {len(new)} new divergence(s), {len(stats['errors'])} tool error(s). "
              "Fix the simulator (crates/sim/), or, when real Arcane 2.8.x answers so too, add an entry "
              "to scripts/schemathesis/known.yaml citing Arcane's source and document it in "
              "docs/arcane-wire.md.")
        print(closing)
        return 1
    if not stats["operations"]:
        print("FAILED: no operation was checked", file=sys.stderr)
        return 1
    print("OK: every failed check is a known divergence of real Arcane from its document")
    print(closing)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

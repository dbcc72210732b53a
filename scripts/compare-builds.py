#!/usr/bin/env python3
"""Prints the lean table (docs/measurements.md, "Against an older build") for two builds of
the server, run side by side: a round runs the older build, then the newer, then the next
round, so a machine whose speed drifts drifts for both.

    scripts/compare-builds.py OLD_BINARY NEW_BINARY [--rounds 7] [--sim target/release/arcane-sim]

Each binary is an `arcane-mcp` (build the older one from its commit in a worktree:
`git worktree add /tmp/old COMMIT && cargo build --release --bin arcane-mcp` there). One
simulator serves both. Each build gets a catalog cache of its own, warmed by two runs not
counted; every counted run is a fresh process over stdio (the dynamic surface, Arcane 2.8.0's
document from third_party/arcane), speaking raw JSON-RPC lines, so the figures are the
server's and not a client library's:

- spawn → `initialize` answered;
- spawn → first `arcane_find_action` answered (it waits for the search index);
- `arcane_find_action` p50 over the queries below, after the first;
- `container.list` through `arcane_execute_action`, p50 of 40 after 5 not counted;
- peak RSS (VmHWM) after those calls;
- `tools/list` of the individual surface, p50 of 20 in a second process.

The stripped size of each binary is taken from a stripped copy (`strip`). Python's standard
library only.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, "third_party", "arcane", "openapi-v2.8.0.json")
KEY = "arcane-sim-key"  # the simulator's default (crates/sim/src/config.rs)

QUERIES = [
    "restart container",
    "scale swarm service",
    "who am i",
    "containers",
    "restrat container",
    "scan image vulnerabilities for the latest nginx tag please",
    "what is eating my disk space",
    "show the logs of the web container",
    "pull the latest image",
    "delete unused volumes",
    "deploy the compose project",
    "list networks",
    "create an api key for ci",
    "sync the gitops repository",
    "the frontend container has been unresponsive for ten minutes and a normal stop does not "
    "work, please terminate it immediately so I can start it again",
    "update all images of my stack",
    "add a new environment",
    "backup a volume",
    "what needs my attention",
    "stop the database",
]


class Server:
    """One server process over stdio, raw JSON-RPC lines."""

    def __init__(self, binary, sim_url, cache, surface="dynamic"):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": cache,
            "XDG_CACHE_HOME": cache,
            "ARCANE_URL": sim_url,
            "ARCANE_API_KEY": KEY,
            "RUST_LOG": "warn",
        }
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(
            [binary, "--spec", SPEC, "--tool-surface", surface],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cache,
        )
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()
        while True:
            got = self.p.stdout.readline()
            if not got:
                raise SystemExit(f"the server ended before answering {method}")
            try:
                msg = json.loads(got)
            except ValueError:
                continue  # a wrapper's line (a profiler's), not the server's
            if msg.get("id") == rid and ("result" in msg or "error" in msg):
                if "error" in msg:
                    raise SystemExit(f"{method}: {msg['error']}")
                return msg["result"]

    def timed(self, method, params):
        t = time.perf_counter()
        result = self.request(method, params)
        return time.perf_counter() - t, result

    def notify(self, method):
        line = json.dumps({"jsonrpc": "2.0", "method": method})
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()

    def initialize(self):
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "compare-builds", "version": "1"},
            },
        )
        ready = time.perf_counter() - self.t0
        self.notify("notifications/initialized")
        return ready

    def peak_rss_mb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def find(server, query):
    return server.timed("tools/call", {"name": "arcane_find_action", "arguments": {"query": query}})


def list_containers(server):
    dt, result = server.timed(
        "tools/call",
        {"name": "arcane_execute_action", "arguments": {"action": "container.list", "params": {}}},
    )
    if result.get("isError"):
        raise SystemExit(f"container.list failed: {json.dumps(result)[:300]}")
    return dt


def one_run(binary, sim_url, cache, settle=0.0):
    s = Server(binary, sim_url, cache)
    try:
        ready = s.initialize()
        dt, _ = find(s, QUERIES[0])
        first_find = time.perf_counter() - s.t0
        finds = [find(s, q)[0] for q in QUERIES[1:] + QUERIES]
        for _ in range(5):
            list_containers(s)
        calls = [list_containers(s) for _ in range(40)]
        rss = s.peak_rss_mb()
        # A warm-up run lets the catalog cache's vectors be written before it ends.
        time.sleep(settle)
    finally:
        s.close()
    s = Server(binary, sim_url, cache, surface="individual")
    try:
        s.initialize()
        lists = [s.timed("tools/list", {})[0] for _ in range(20)]
    finally:
        s.close()
    return {
        "ready": ready * 1e3,
        "first_find": first_find * 1e3,
        "find_p50": statistics.median(finds) * 1e3,
        "call_p50": statistics.median(calls) * 1e3,
        "rss": rss,
        "list_individual": statistics.median(lists) * 1e3,
    }


def stripped_size(binary):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "bin")
        if shutil.which("strip"):
            subprocess.run(["strip", "-o", out, binary], check=True)
            return os.path.getsize(out)
        return os.path.getsize(binary)


def start_sim(sim):
    p = subprocess.Popen(
        [sim, "--spec", SPEC], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        p.kill()
        raise SystemExit(f"{sim} did not start: {line!r}")
    return p, line.split()[-1]


ROWS = [
    ("stripped binary (MB)", "size", "{:.1f}"),
    ("spawn → `initialize` answered (ms)", "ready", "{:.1f}"),
    ("spawn → first `arcane_find_action` answered (ms)", "first_find", "{:.0f}"),
    ("`arcane_find_action` p50, warm (ms)", "find_p50", "{:.2f}"),
    ("warm `container.list` call p50 (ms)", "call_p50", "{:.2f}"),
    ("peak RSS after the calls (MB)", "rss", "{:.1f}"),
    ("individual `tools/list` p50 (ms)", "list_individual", "{:.2f}"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sim", default=os.path.join(ROOT, "target", "release", "arcane-sim"))
    a = ap.parse_args()
    a.old, a.new, a.sim = (os.path.abspath(x) for x in (a.old, a.new, a.sim))
    for b in (a.old, a.new, a.sim):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"{b}: not an executable (build it first)")
    sim, url = start_sim(a.sim)
    caches = [tempfile.mkdtemp(prefix="compare-builds-") for _ in (a.old, a.new)]
    try:
        builds = list(zip((a.old, a.new), caches))
        for binary, cache in builds:
            for _ in range(2):
                one_run(binary, url, cache, settle=1.5)
        runs = [[], []]
        for r in range(a.rounds):
            for i, (binary, cache) in enumerate(builds):
                runs[i].append(one_run(binary, url, cache))
            print(f"round {r + 1} of {a.rounds}", file=sys.stderr)
    finally:
        sim.kill()
        for c in caches:
            shutil.rmtree(c, ignore_errors=True)
    med = [{k: statistics.median(run[k] for run in rs) for k in rs[0]} for rs in runs]
    for m, b in zip(med, (a.old, a.new)):
        m["size"] = stripped_size(b) / 1e6
    print(f"| figure | old: {a.old} | new: {a.new} | new / old |")
    print("|---|---|---|---|")
    for label, key, fmt in ROWS:
        o, n = med[0][key], med[1][key]
        print(f"| {label} | {fmt.format(o)} | {fmt.format(n)} | {n / o:.2f}× |")
    print(f"\nmedians of {a.rounds} interleaved rounds; {len(QUERIES) * 2 - 1} finds and 40 calls a run")


if __name__ == "__main__":
    main()

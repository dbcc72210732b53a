#!/usr/bin/env python3
"""Measures our server side by side with the other public Arcane MCP servers ("peers"),
against one arcane-sim, and prints a markdown table: a figure a row, a server a column, and
our lead over the best peer for each figure (best peer / ours: above 1× we lead).

    scripts/compare-peers.py PEERS_DIR [--binary target/release/arcane-mcp]
        [--sim target/release/arcane-sim] [--peers scripts/peers.json] [--only NAME,...]
        [--rounds 5] [--calls 50] [--burst 200] [--idle SECONDS] [--json OUT]

Getting the peers. No peer code is kept in this repository (it is third-party); the peers
and how each is installed and started are in scripts/peers.json (repository, commit, install
steps, command, the env it reads the Arcane URL and key from, its own list-containers tool):

    for each peer in scripts/peers.json:
        git clone REPO PEERS_DIR/DIR && git -C PEERS_DIR/DIR checkout COMMIT
        (cd PEERS_DIR/DIR && run each of its "install" steps, {peers} being PEERS_DIR)

(npm and PyPI only: the node peers are `npm ci && npm run build`, the Python one a venv with
`pip install .`, the Cloudflare-Worker one `wrangler dev` under Node 22 taken from npm.)
Measure under the build lock on a shared machine, from copies of the binaries so a rebuild
cannot change them mid-run:

    cp target/release/arcane-mcp /tmp/arcane-mcp-bench; cp target/release/arcane-sim /tmp/sim-bench
    flock /tmp/build.lock scripts/compare-peers.py /work/peers \\
        --binary /tmp/arcane-mcp-bench --sim /tmp/sim-bench

What a run is. Every counted run is a fresh server process (stdio peers over raw JSON-RPC
lines as in compare-builds.py; an HTTP peer over raw streamable-HTTP POSTs with http.client,
so the figures are the servers' and not a client library's), one after the other within a
round, rounds interleaved (the order rotates each round) so a drifting machine drifts for
all; figures are medians over the rounds. Each server has one run not counted first (disk
cache, node's compile cache); ours "with stored vectors" has a catalog cache of its own warmed
by two runs, ours "without" a fresh empty cache dir each run. In each run:

- spawn → `initialize` answered (an HTTP peer: until its port answers it);
- `ping` round trip p50 of 20, after `initialize`;
- the server's own list-containers tool (ours: `arcane_execute_action` `container.list`),
  50 sequential calls: p50 and the total; every answer must name a container of the
  simulator's demo state, not be an error;
- server CPU (utime+stime, and cutime+cstime of reaped children, from /proc/PID/stat, summed
  over the process tree) consumed by those 50 calls; the tick is 10 ms, so the same is also
  given from the live threads' /proc/PID/task/TID/schedstat (ns);
- peak RSS: VmHWM summed over the process tree, after the 50 calls (and after the burst);
- a burst: 200 list-container calls written at once without waiting for any answer (stdio:
  one write; HTTP: 200 POSTs on 200 connections released together), time until all 200 are
  answered.

The simulator listens with a backlog of 128: a server that opens ~200 connections to it at
once in the burst (the node peers' fetch does) now and then meets a dropped SYN and TCP's 1 s
retransmit, and that run's burst takes ~1.1 s; medians stand a few such runs, and --json keeps
every run to look at.

With --idle S every server waits S seconds after initialize (and the pings) before the
calls, and the CPU it spent by itself in that wait is a row of its own: without it, work a
server starts on its own at startup (ours loads its search index in the background) falls
within the 50 calls' window and counts as theirs.

Python's standard library only.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, "third_party", "arcane", "openapi-v2.8.0.json")
KEY = "arcane-sim-key"  # the simulator's default (crates/sim/src/config.rs)
TOKEN = "compare-peers-token"  # for a peer that asks its clients for a bearer token
EXPECT = "1b5162823263"  # a container of the simulator's demo state (its short id: every peer prints it)
PROTOCOL = "2025-06-18"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PINGS = 20


# --- the process tree ----------------------------------------------------------------------


def _stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return s[s.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def tree(root):
    """root and every live descendant."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                kids.setdefault(int(_stat(d)[1]), []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_seconds(root):
    total = 0
    for p in tree(root):
        try:
            f = _stat(p)
            total += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):
            pass
    return total / CLK_TCK


def run_ns(root):
    """CPU time of the tree's live threads in ns (schedstat: finer than the 10 ms tick of
    /proc/PID/stat, but blind to threads that ended)."""
    total = 0
    for p in tree(root):
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def peak_rss_mb(root):
    total = 0
    for p in tree(root):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- servers -------------------------------------------------------------------------------


def init_params():
    return {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "compare-peers", "version": "1"},
    }


def check_call(result, what):
    if result.get("isError") or EXPECT not in json.dumps(result):
        raise SystemExit(f"{what}: not a container list: {json.dumps(result)[:400]}")


class Stdio:
    """One server process over stdio, raw JSON-RPC lines."""

    def __init__(self, command, env, cwd, log):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self.pid = self.p.pid
        self.next_id = 0

    def _send(self, obj):
        self.p.stdin.write(json.dumps(obj).encode() + b"\n")
        self.p.stdin.flush()

    def _read(self):
        while True:
            got = self.p.stdout.readline()
            if not got:
                raise SystemExit("the server ended before answering")
            try:
                msg = json.loads(got)
            except ValueError:
                continue  # not a JSON-RPC line (a banner)
            if "result" in msg or "error" in msg:
                return msg

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self._read()
            if msg.get("id") == rid:
                if "error" in msg:
                    raise SystemExit(f"{method}: {msg['error']}")
                return msg["result"]

    def initialize(self):
        self.request("initialize", init_params())
        ready = time.perf_counter() - self.t0
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return ready

    def burst(self, method, params, n):
        first = self.next_id + 1
        self.next_id += n
        data = b"".join(
            json.dumps({"jsonrpc": "2.0", "id": first + i, "method": method, "params": params}).encode()
            + b"\n"
            for i in range(n)
        )
        t = time.perf_counter()
        # Written from a thread: a server that answers while the requests still arrive must
        # not find its stdout full while we are blocked writing its stdin.
        w = threading.Thread(target=lambda: (self.p.stdin.write(data), self.p.stdin.flush()))
        w.start()
        answered = []
        while len(answered) < n:
            msg = self._read()
            if isinstance(msg.get("id"), int) and first <= msg["id"] < first + n:
                answered.append(msg)
        dt = time.perf_counter() - t
        w.join()
        for msg in answered:
            if "error" in msg:
                raise SystemExit(f"burst: {msg['error']}")
            check_call(msg["result"], "burst")
        return dt

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            pass
        _end_group(self.p)


def _end_group(p):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)  # the session this run started, and only it
        except ProcessLookupError:
            break
        try:
            p.wait(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(p.pid, signal.SIGKILL)  # children left behind (workerd)
    except ProcessLookupError:
        pass


class Http:
    """One server process over streamable HTTP: raw POSTs with http.client."""

    def __init__(self, command, env, cwd, log, url, headers):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self.pid = self.p.pid
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.path = u.hostname, u.port, u.path or "/"
        self.headers = dict(headers)
        self.conn = None
        self.next_id = 0

    def _conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def _headers(self):
        h = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **self.headers,
        }
        return h

    @staticmethod
    def _answer(resp, rid):
        """The JSON-RPC answer with id rid, from a JSON or an SSE response."""
        ctype = resp.getheader("Content-Type", "")
        if resp.status >= 400:
            raise SystemExit(f"HTTP {resp.status}: {resp.read()[:300]!r}")
        if ctype.startswith("text/event-stream"):
            data, found = [], None
            while found is None:
                line = resp.readline()
                if not line:
                    break
                line = line.rstrip(b"\r\n")
                if line.startswith(b"data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    msg = json.loads(b"\n".join(data))
                    data = []
                    if msg.get("id") == rid and ("result" in msg or "error" in msg):
                        found = msg
            resp.read()  # the stream ends after the answer; keeps the connection reusable
            if found is None:
                raise SystemExit("the event stream ended without the answer")
            return found
        body = resp.read()
        if not body:
            return None
        msg = json.loads(body)
        return msg

    def _post(self, conn, obj):
        conn.request("POST", self.path, body=json.dumps(obj).encode(), headers=self._headers())
        return conn.getresponse()

    def request(self, method, params, conn=None):
        self.next_id += 1
        rid = self.next_id
        conn = conn or self.conn
        msg = self._answer(self._post(conn, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}), rid)
        if "error" in msg:
            raise SystemExit(f"{method}: {msg['error']}")
        return msg["result"]

    def initialize(self):
        deadline = time.perf_counter() + 120
        while True:
            self.conn = self._conn()
            try:
                resp = self._post(self.conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params()})
                break
            except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected):
                self.conn.close()
                if self.p.poll() is not None or time.perf_counter() > deadline:
                    raise SystemExit("the HTTP server did not come up")
                time.sleep(0.02)
        sid = resp.getheader("Mcp-Session-Id")
        self._answer(resp, 0)
        ready = time.perf_counter() - self.t0
        if sid:
            self.headers["Mcp-Session-Id"] = sid
        self.headers["MCP-Protocol-Version"] = PROTOCOL
        resp = self._post(self.conn, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        resp.read()
        return ready

    def burst(self, method, params, n):
        first = self.next_id + 1
        self.next_id += n
        go = threading.Barrier(n + 1)
        done, errors = [0.0] * n, []

        def one(i):
            conn = self._conn()
            try:
                go.wait()
                rid = first + i
                msg = self._answer(
                    self._post(conn, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}), rid
                )
                done[i] = time.perf_counter()
                if "error" in msg:
                    errors.append(msg["error"])
                else:
                    check_call(msg["result"], "burst")
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(repr(e))
            finally:
                conn.close()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        go.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        if errors:
            raise SystemExit(f"burst: {len(errors)} failed, e.g. {errors[0]}")
        return max(done) - t0

    def close(self):
        if self.conn:
            self.conn.close()
        _end_group(self.p)


# --- one run ------------------------------------------------------------------------------


def fill(x, subs):
    if isinstance(x, str):
        for k, v in subs.items():
            x = x.replace("{" + k + "}", str(v))
        return x
    if isinstance(x, list):
        return [fill(y, subs) for y in x]
    if isinstance(x, dict):
        return {k: fill(v, subs) for k, v in x.items()}
    return x


class Subject:
    """A server as measured: how to start it and its list-containers call."""

    def __init__(self, label, peer=None, binary=None, cache=None, peers_dir=None):
        self.label, self.peer, self.binary, self.cache, self.peers_dir = label, peer, binary, cache, peers_dir

    def start(self, sim_url, home):
        log = open(os.path.join(home, "server.log"), "wb")
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "XDG_CACHE_HOME": home, "LANG": "C.UTF-8"}
        if self.peer is None:
            cache = self.cache or home
            env = dict(base, HOME=cache, XDG_CACHE_HOME=cache, ARCANE_URL=sim_url, ARCANE_API_KEY=KEY, RUST_LOG="warn")
            s = Stdio([self.binary, "--spec", SPEC, "--tool-surface", "dynamic"], env, cache, log)
            s.tool = ("arcane_execute_action", {"action": "container.list", "params": {}})
            return s
        p = self.peer
        subs = {"peers": self.peers_dir, "url": sim_url, "key": KEY, "home": home, "port": free_port(), "token": TOKEN}
        env = dict(base, **fill(p.get("env", {}), subs))
        cwd = os.path.join(self.peers_dir, p["dir"])
        cmd = fill(p["command"], subs)
        if p["transport"] == "http":
            s = Http(cmd, env, cwd, log, fill(p["url"], subs), fill(p.get("headers", {}), subs))
        else:
            s = Stdio(cmd, env, cwd, log)
        s.tool = (p["tool"], p.get("args", {}))
        return s


def one_run(subject, sim_url, calls, burst, settle=0.0, idle=0.0):
    home = tempfile.mkdtemp(prefix="compare-peers-")
    s = None
    try:
        s = subject.start(sim_url, home)
        ready = s.initialize()
        pings = []
        for _ in range(PINGS):
            t = time.perf_counter()
            s.request("ping", {})
            pings.append(time.perf_counter() - t)
        name, args = s.tool
        params = {"name": name, "arguments": args}
        idle0 = cpu_seconds(s.pid)
        time.sleep(idle)  # --idle: what a server does by itself after initialize kept apart
        cpu0, ns0 = cpu_seconds(s.pid), run_ns(s.pid)
        t_all = time.perf_counter()
        lat = []
        for _ in range(calls):
            t = time.perf_counter()
            check_call(s.request("tools/call", params), subject.label)
            lat.append(time.perf_counter() - t)
        total = time.perf_counter() - t_all
        cpu, ns = cpu_seconds(s.pid) - cpu0, run_ns(s.pid) - ns0
        rss = peak_rss_mb(s.pid)
        b = s.burst("tools/call", params, burst)
        rss_burst = peak_rss_mb(s.pid)
        time.sleep(settle)  # a warm-up run of ours lets the catalog cache's vectors be written
        return {
            "ready": ready * 1e3,
            "ping": statistics.median(pings) * 1e3,
            "call_p50": statistics.median(lat) * 1e3,
            "calls_total": total * 1e3,
            "cpu": cpu * 1e3,
            "cpu_ns": ns / 1e6,
            "idle_cpu": (cpu0 - idle0) * 1e3,
            "rss": rss,
            "burst": b * 1e3,
            "rss_burst": rss_burst,
        }
    except SystemExit as e:
        tail = ""
        try:
            with open(os.path.join(home, "server.log"), "rb") as f:
                tail = f.read()[-1500:].decode(errors="replace")
        except OSError:
            pass
        raise SystemExit(f"{subject.label}: {e}\n--- its log ends ---\n{tail}")
    finally:
        if s:
            s.close()
        shutil.rmtree(home, ignore_errors=True)


def start_sim(sim):
    """The simulator as compare-builds.py starts it (one way to start it for both scripts)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "compare_builds", os.path.join(ROOT, "scripts", "compare-builds.py")
    )
    builds = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builds)
    return builds.start_sim(sim)


# figure, key, format, the lead the issue asks of us (None: just reported)
ROWS = [
    ("spawn → `initialize` answered (ms)", "ready", "{:.0f}", None),
    ("`ping` round trip p50 (ms)", "ping", "{:.3f}", 3.0),
    ("list-containers call p50, of 50 sequential (ms)", "call_p50", "{:.2f}", None),
    ("50 sequential calls, total (ms)", "calls_total", "{:.0f}", 1.0),
    ("server CPU for the 50 calls (ms)", "cpu", "{:.0f}", 5.0),
    ("the same from the threads' schedstat (ms)", "cpu_ns", "{:.1f}", None),
    ("peak RSS after the 50 calls (MB)", "rss", "{:.1f}", 1.7),
    ("burst of 200 calls, until all answered (ms)", "burst", "{:.0f}", 1.0),
    ("peak RSS after the burst (MB)", "rss_burst", "{:.1f}", None),
]


def lead(best, ours):
    if ours <= 0:
        return "∞ (under a tick)" if best > 0 else "–"
    if best <= 0:
        return "0× (best peer: 0)"
    return f"{best / ours:.2f}×"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("peers_dir", help="where the peers were fetched and installed")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "arcane-mcp"))
    ap.add_argument("--sim", default=os.path.join(ROOT, "target", "release", "arcane-sim"))
    ap.add_argument("--peers", default=os.path.join(ROOT, "scripts", "peers.json"))
    ap.add_argument("--only", help="comma-separated peer names (or dirs) to run; default all")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument(
        "--idle",
        type=float,
        default=0.0,
        help="seconds to wait after initialize (and the pings) before the calls; its CPU is a row",
    )
    ap.add_argument("--json", help="write every run's figures here")
    a = ap.parse_args()
    a.binary, a.sim, a.peers_dir = (os.path.abspath(x) for x in (a.binary, a.sim, a.peers_dir))
    for b in (a.binary, a.sim):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"{b}: not an executable (build it first)")
    with open(a.peers) as f:
        peers = json.load(f)["peers"]
    if a.only:
        want = set(a.only.split(","))
        peers = [p for p in peers if p["name"] in want or p["dir"] in want]
    for p in peers:
        if not os.path.isdir(os.path.join(a.peers_dir, p["dir"])):
            raise SystemExit(f"{p['name']}: no {os.path.join(a.peers_dir, p['dir'])} (fetch and install it first)")

    stored = tempfile.mkdtemp(prefix="compare-peers-cache-")
    ours = [
        Subject("ours, stored vectors", binary=a.binary, cache=stored),
        Subject("ours, no stored vectors", binary=a.binary),  # a fresh cache dir (its home) each run
    ]
    theirs = [Subject(p["name"], peer=p, peers_dir=a.peers_dir) for p in peers]
    subjects = ours + theirs
    sim, url = start_sim(a.sim)
    try:
        for _ in range(2):
            one_run(ours[0], url, a.calls, a.burst, settle=1.5)
        for s in subjects[1:]:
            one_run(s, url, a.calls, a.burst)  # not counted
        runs = {s.label: [] for s in subjects}
        for r in range(a.rounds):
            k = r % len(subjects)
            for s in subjects[k:] + subjects[:k]:
                runs[s.label].append(one_run(s, url, a.calls, a.burst, idle=a.idle))
            print(f"round {r + 1} of {a.rounds}", file=sys.stderr)
    finally:
        sim.kill()
        shutil.rmtree(stored, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)
    med = {lab: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for lab, rs in runs.items()}
    labels = [s.label for s in subjects]
    peer_labels = [s.label for s in theirs]
    head = " | ".join(labels)
    print(f"| figure | {head} | lead, stored vectors | lead, none stored | lead asked |")
    print("|---" * (len(labels) + 4) + "|")
    rows = ROWS
    if a.idle:
        rows = [(f"server CPU in the {a.idle:g} s idle after initialize (ms)", "idle_cpu", "{:.0f}", None)] + rows
    for title, key, fmt, asked in rows:
        cells = " | ".join(fmt.format(med[lab][key]) for lab in labels)
        if peer_labels:
            best = min(med[lab][key] for lab in peer_labels)
            leads = f"{lead(best, med[labels[0]][key])} | {lead(best, med[labels[1]][key])}"
        else:
            leads = "– | –"
        want = "> 1×" if asked == 1.0 else (f"≥ {asked:g}×" if asked else "–")
        print(f"| {title} | {cells} | {leads} | {want} |")
    print(
        f"\nmedians of {a.rounds} interleaved rounds, a fresh process a run; {PINGS} pings, "
        f"{a.calls} sequential calls and a burst of {a.burst} a run; lead = best peer / ours"
        + (f"; the calls began {a.idle:g} s after initialize" if a.idle else "; the calls began right after initialize")
    )


if __name__ == "__main__":
    main()

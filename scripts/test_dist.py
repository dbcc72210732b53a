"""Install what scripts/dist.sh put in dist/ the way a user does, with no package registry,
and talk MCP to what got installed (scripts/test-dist.sh runs this; docs/install.md).

    python3 scripts/test_dist.py DIST_DIR UV_BINARY

Each check prints one `ok:` line; the last line is `N passed, N failed`. Exit code 1 when
any failed.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import urllib.request
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"]
# Hang guard for every child: none of these take more than a few seconds when they work.
TIMEOUT = 120

# No registry is asked: pip, uv and npm are pointed at an address where nothing listens.
NO_REGISTRY = "http://127.0.0.1:9/"
ENV = dict(
    os.environ,
    PIP_INDEX_URL=NO_REGISTRY,
    PIP_NO_INDEX="1",
    UV_INDEX_URL=NO_REGISTRY,
    UV_DEFAULT_INDEX=NO_REGISTRY,
    UV_OFFLINE="1",
    UV_NO_CONFIG="1",
    npm_config_registry=NO_REGISTRY,
    npm_config_offline="true",
    npm_config_audit="false",
    npm_config_fund="false",
    npm_config_update_notifier="false",
)
# The installed commands run from an empty folder: no catalog/ of this repository around.
WORK = Path(tempfile.mkdtemp(prefix="arcane-test-dist-"))
ENV["HOME"] = str(WORK / "home")
Path(ENV["HOME"]).mkdir()

checks = Checks(tracebacks=True)
check = checks.check


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=ENV, cwd=WORK, capture_output=True, text=True, timeout=TIMEOUT, **kw)


def must(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    out = run(cmd, **kw)
    if out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    return out


def one(pattern: str) -> str:
    found = glob.glob(os.path.join(DIST, pattern))
    if len(found) != 1:
        raise AssertionError(f"expected one {pattern} in {DIST}, found {found}")
    return found[0]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test-dist", "version": "1"},
    },
}


def mcp_session(cmd: list[str]) -> None:
    """An MCP client's first exchange over stdio with `cmd`: initialize, initialized,
    tools/list; then stdin closes and the server must end by itself with exit code 0."""
    p = subprocess.Popen(cmd, env=ENV, cwd=WORK, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        def send(msg):
            p.stdin.write(json.dumps(msg) + "\n")
            p.stdin.flush()

        def answer():
            line = p.stdout.readline()
            if not line:
                raise AssertionError(f"{cmd[0]} closed stdout: {p.stderr.read()}")
            return json.loads(line)

        send(INITIALIZE)
        init = answer()
        info = init["result"]["serverInfo"]
        assert info["name"] == "arcane-mcp" and info["version"] == VERSION, init
        assert init["result"]["protocolVersion"] == "2025-06-18", init
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = answer()
        names = sorted(t["name"] for t in tools["result"]["tools"])
        assert names == ["arcane_execute_action", "arcane_find_action"], names
        p.stdin.close()
        code = p.wait(timeout=TIMEOUT)
        assert code == 0, f"exit code {code} after stdin closed: {p.stderr.read()}"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def version_of(cmd: list[str]) -> None:
    out = must(cmd + ["--version"])
    assert out.stdout.strip() == f"arcane-mcp {VERSION}", repr(out.stdout)


def ended_by_sigterm(cmd: list[str]) -> int:
    """Start `cmd` serving stdio (stdin held open), SIGTERM it once it answered initialize,
    and return its exit status (negative: the signal that ended it)."""
    p = subprocess.Popen(cmd, env=ENV, cwd=WORK, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        p.stdin.write(json.dumps(INITIALIZE) + "\n")
        p.stdin.flush()
        assert "serverInfo" in p.stdout.readline(), "no answer to initialize"
        p.send_signal(signal.SIGTERM)
        return p.wait(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def binaries_running(path: str) -> list[int]:
    """PIDs of processes whose executable is `path` (Linux /proc)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.readlink(d / "exe") == path:
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


DIST = os.path.abspath(sys.argv[1])
UV = sys.argv[2]
# A verdaccio binary (npm's local registry), for `npx -y` itself; without it those checks are
# reported as skipped.
VERDACCIO = sys.argv[3] if len(sys.argv) > 3 else None

# ---------------------------------------------------------------- PyPI wheel

WHEEL = one("arcane_mcp_server-*.whl")


@check("the wheel installs into a fresh virtualenv, without an index")
def _():
    must([sys.executable, "-m", "venv", str(WORK / "venv")])
    must([str(WORK / "venv/bin/pip"), "install", "--no-index", "--disable-pip-version-check", WHEEL])
    version_of([str(WORK / "venv/bin/arcane-mcp")])


@check("the wheel's arcane-mcp answers MCP initialize over stdio")
def _():
    mcp_session([str(WORK / "venv/bin/arcane-mcp"), "demo"])


@check("the wheel's package metadata: licence, URLs, the registry's mcp-name marker")
def _():
    meta = Path(glob.glob(str(WORK / "venv/lib/python*/site-packages/arcane_mcp_server-*.dist-info/METADATA"))[0]).read_text()
    for line in (f"Version: {VERSION}", "License-Expression: MIT", "License-File: LICENSE", "License-File: LICENSE-arcane"):
        assert line in meta.splitlines(), f"METADATA lacks '{line}'"
    assert "mcp-name: io.github.arcane-mcp/arcane-mcp" in meta, "README marker missing"
    assert "Project-URL: Repository, https://github.com/arcane-mcp/arcane-mcp" in meta, meta[:800]


@check("uvx --from WHEEL arcane-mcp --version, offline")
def _():
    ENV["UV_CACHE_DIR"] = str(WORK / "uv-cache")
    ENV["UV_TOOL_DIR"] = str(WORK / "uv-tools")
    version_of([UV, "tool", "run", "--offline", "--from", WHEEL, "arcane-mcp"])


@check("uvx --from WHEEL arcane-mcp demo answers MCP initialize")
def _():
    mcp_session([UV, "tool", "run", "--offline", "--from", WHEEL, "arcane-mcp", "demo"])


# ---------------------------------------------------------------- npm

LAUNCHER = one(f"arcane-mcp-server-{VERSION}.tgz")
PLATFORM_PKG = one(f"arcane-mcp-server-*-{VERSION}.tgz")
PREFIX = WORK / "npm-prefix"


@check("the npm tarballs install into an empty prefix, without a registry")
def _():
    PREFIX.mkdir()
    # The platform tarball first, then the launcher: npm finds its optional dependency for
    # this platform already there; the other platforms' are skipped (os/cpu do not match).
    must(["npm", "install", "--prefix", str(PREFIX), "--no-save", "--omit=dev", PLATFORM_PKG, LAUNCHER])
    # Both commands: `arcane-mcp`, and the package's own name, which `npx -y arcane-mcp-server` runs.
    for command in ("arcane-mcp", "arcane-mcp-server"):
        launcher = PREFIX / "node_modules/.bin" / command
        assert launcher.exists(), list((PREFIX / "node_modules/.bin").iterdir())
    pkg = json.loads((PREFIX / "node_modules/arcane-mcp-server/package.json").read_text())
    assert pkg["mcpName"] == "io.github.arcane-mcp/arcane-mcp", pkg


def npx(*args: str) -> list[str]:
    return ["npx", "--prefix", str(PREFIX), "--no-install", "arcane-mcp-server", *args]


@check("npx arcane-mcp-server --version")
def _():
    version_of(npx())


@check("npx arcane-mcp-server demo answers MCP initialize over stdio")
def _():
    mcp_session(npx("demo"))


@check("the launcher passes on the binary's exit code")
def _():
    native = glob.glob(str(PREFIX / "node_modules/arcane-mcp-server-*/bin/arcane-mcp"))[0]
    direct = run([native, "--no-such-flag"])
    launched = run(npx("--no-such-flag"))
    assert direct.returncode == 2, direct
    assert launched.returncode == direct.returncode, (launched.returncode, launched.stderr)
    assert "--no-such-flag" in launched.stderr, launched.stderr


@check("SIGTERM to the launcher reaches the server, which ends as it does when run directly")
def _():
    native = os.path.realpath(glob.glob(str(PREFIX / "node_modules/arcane-mcp-server-*/bin/arcane-mcp"))[0])
    direct = ended_by_sigterm([native, "demo"])
    launched = ended_by_sigterm([str(PREFIX / "node_modules/.bin/arcane-mcp"), "demo"])
    assert launched == direct, f"the launcher ended with {launched}, the server alone with {direct}"
    print(f"   (both ended with status {direct})")
    # The server did not outlive the launcher.
    deadline = time.monotonic() + 10
    while binaries_running(native) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not binaries_running(native), f"{native} still runs after the launcher ended"


@check("the launcher says what to do when the platform package is missing")
def _():
    bare = WORK / "npm-bare"
    bare.mkdir()
    must(["npm", "install", "--prefix", str(bare), "--no-save", "--omit=optional", LAUNCHER])
    out = run([str(bare / "node_modules/.bin/arcane-mcp"), "--version"])
    assert out.returncode == 1 and "is not installed" in out.stderr and "optional" in out.stderr, out


if VERDACCIO:

    @check("npx -y arcane-mcp-server, from a local registry holding only the two tarballs")
    def _():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        reg = f"http://127.0.0.1:{port}/"
        home = WORK / "verdaccio"
        (home / "storage").mkdir(parents=True)
        # No uplink: the registry knows our two packages and nothing else.
        (home / "config.yaml").write_text(
            f"storage: {home / 'storage'}\n"
            f"auth:\n  htpasswd:\n    file: {home / 'htpasswd'}\n    max_users: -1\n"
            "uplinks: {}\nmax_body_size: 200mb\n"
            "packages:\n  '**':\n    access: $all\n    publish: $anonymous\n"
            "log: { type: stdout, format: pretty, level: error }\n"
        )
        server = subprocess.Popen([VERDACCIO, "--config", str(home / "config.yaml"), "--listen", f"127.0.0.1:{port}"],
                                  env=ENV, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(reg + "-/ping", timeout=2)
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise AssertionError("verdaccio did not start")
                    time.sleep(0.3)
            env = dict(ENV, npm_config_registry=reg, npm_config_offline="false",
                       npm_config_cache=str(home / "npm-cache"))
            env[f"npm_config_//127.0.0.1:{port}/:_authToken"] = "anonymous"
            for tarball in (PLATFORM_PKG, LAUNCHER):
                out = subprocess.run(["npm", "publish", tarball], env=env, cwd=home, capture_output=True,
                                     text=True, timeout=TIMEOUT)
                assert out.returncode == 0, out.stderr
            empty = home / "empty"
            empty.mkdir()
            out = subprocess.run(["npx", "-y", "arcane-mcp-server", "--version"], env=env, cwd=empty,
                                 capture_output=True, text=True, timeout=TIMEOUT)
            assert out.stdout.strip() == f"arcane-mcp {VERSION}", (out.stdout, out.stderr)
            saved = dict(ENV)
            ENV.update(env)
            try:
                mcp_session(["npx", "-y", "arcane-mcp-server", "demo"])
            finally:
                ENV.clear()
                ENV.update(saved)
        finally:
            server.terminate()
            server.wait(timeout=TIMEOUT)
else:
    print("skipped: npx -y from a local registry (no verdaccio given)")

failed = checks.summary()
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failed else 0)

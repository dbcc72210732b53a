#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned with the
# Node 22 it needs in tests/conformance/package-lock.json) against arcane-mcp on loopback, with
# the simulator as Arcane:
#
#   scripts/conformance.sh [--keep DIR]
#
# - server scenarios (every suite: the dated protocols, 2026-07-28 and the extensions) over
#   Streamable HTTP, judged against tests/conformance/baseline.yaml: a failure it does not list,
#   or a listed one that now passes, fails the run (the file says why each listed one does not
#   apply);
# - authorization-server scenarios against `--oauth-issuer self`: the metadata, and an
#   authorization code grant whose sign-in page this script answers with the simulator's key
#   (as a person pasting a key would), its code exchanged by the suite. Both must pass.
#
# It installs the pinned packages (`npm ci`) when tests/conformance/node_modules is missing or
# older than the lock. ARCANE_MCP_BIN and ARCANE_SIM_BIN name already built binaries (CI: the
# test step's debug ones); without them the script builds both (`cargo build`). --keep DIR
# keeps the suite's results (checks.json per scenario) and the servers' logs.
set -euo pipefail
cd "$(dirname "$0")/.."

keep=
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) keep=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "conformance.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

dir=tests/conformance
if [ ! -x "$dir/node_modules/.bin/node" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "== installing the conformance suite and Node (npm ci --prefix $dir)"
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
fi
node=$dir/node_modules/.bin/node
suite=(
    "$node" "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
)

mcp=${ARCANE_MCP_BIN:-}
sim=${ARCANE_SIM_BIN:-}
if [ -z "$mcp" ] || [ -z "$sim" ]; then
    echo "== building arcane-mcp and arcane-sim"
    cargo --color never build --quiet --bin arcane-mcp -p arcane-mcp --bin arcane-sim -p arcane-sim
    mcp=${mcp:-target/debug/arcane-mcp}
    sim=${sim:-target/debug/arcane-sim}
fi

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ -n "$keep" ]; then
        mkdir -p "$keep" && cp -r "$work"/. "$keep"/
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# A free loopback port (the OAuth issuer's public URL names its port before it listens).
free_port() {
    "$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

# The simulator prints exactly one line once it accepts connections (crates/sim/README.md).
RUST_LOG=warn "$sim" --listen 127.0.0.1:0 >"$work/sim.out" 2>"$work/sim.err" &
pids+=($!)
arcane=
for _ in $(seq 1 100); do
    arcane=$(sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\)$/\1/p' "$work/sim.out")
    [ -n "$arcane" ] && break
    sleep 0.1
done
[ -n "$arcane" ] || { echo "conformance.sh: arcane-sim did not start:" >&2; cat "$work/sim.err" >&2; exit 1; }
key=arcane-sim-key

# Starts arcane-mcp over HTTP on port $1 with the remaining arguments; waits for /healthz.
serve() {
    local port=$1 name=$2
    shift 2
    ARCANE_MCP_LOG=warn "$mcp" --arcane-url "$arcane" --api-key "$key" \
        --spec third_party/arcane/openapi-v2.8.0.json \
        --transport http --listen "127.0.0.1:$port" "$@" \
        </dev/null >/dev/null 2>"$work/$name.err" &
    pids+=($!)
    for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return 0
        sleep 0.1
    done
    echo "conformance.sh: arcane-mcp ($name) did not serve:" >&2
    cat "$work/$name.err" >&2
    exit 1
}

status=0

# ---- server scenarios -----------------------------------------------------------------------
# Without a bearer token (loopback only): the suite sends none.
port=$(free_port)
serve "$port" server --allow-unauthenticated
echo "== conformance: server scenarios (every suite) against http://127.0.0.1:$port/mcp"
if ! "${suite[@]}" server --url "http://127.0.0.1:$port/mcp" --suite all \
    --expected-failures "$dir/baseline.yaml" -o "$work/server" >"$work/server.log" 2>&1; then
    status=1
fi
# The summary and the baseline's verdict, not the progress lines. The suite's "N passed, M
# failed" counts checks the baseline expects to fail too: written as "not passing", so that no
# reader of CI's log takes them for a failing test run (the verdict is this script's status).
summary() { sed -n '/=== SUMMARY ===/,$p' "$1" | sed -E 's/ ([0-9]+) failed/ \1 not passing/g'; }
summary "$work/server.log"

# ---- authorization-server scenarios ---------------------------------------------------------
port=$(free_port)
issuer="http://127.0.0.1:$port"
serve "$port" issuer --public-url "$issuer" --oauth-issuer self
callback=$(free_port)
client=$(curl -sf "$issuer/register" -H 'content-type: application/json' \
    -d "{\"client_name\": \"conformance\", \"redirect_uris\": [\"http://127.0.0.1:$callback/callback\"], \"token_endpoint_auth_method\": \"none\"}" |
    "$node" -e 'let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => console.log(JSON.parse(s).client_id))')
echo "== conformance: authorization-server scenarios against $issuer (--oauth-issuer self)"
"${suite[@]}" authorization --url "$issuer" --client-id "$client" --resource "$issuer/mcp" \
    --port "$callback" -o "$work/authorization" >"$work/authorization.log" 2>&1 &
suite_pid=$!
pids+=("$suite_pid")
# The person's part: the suite prints the authorization URL and waits for its callback. The
# sign-in page is answered with the key (method `key`), from the page's own origin, with its
# CSRF cookie; the redirect it answers goes to the suite's callback.
url=
for _ in $(seq 1 300); do
    url=$(grep -m1 "^$issuer/authorize?" "$work/authorization.log" || true)
    [ -n "$url" ] && break
    kill -0 "$suite_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -n "$url" ]; then
    page=$(curl -sf -c "$work/cookies" "$url")
    field() { printf '%s' "$page" | sed -n "s/.*name=\"$1\" value=\"\([^\"]*\)\".*/\1/p"; }
    back=$(curl -s -o /dev/null -w '%{redirect_url}' -b "$work/cookies" -H "origin: $issuer" \
        --data-urlencode "form=$(field form)" --data-urlencode "csrf=$(field csrf)" \
        --data-urlencode "api_key=$key" -d method=key -d access=write "$issuer/authorize")
    curl -sf -o /dev/null "$back" || echo "conformance.sh: the sign-in gave no redirect to the callback ($back)" >&2
else
    echo "conformance.sh: the suite printed no authorization URL" >&2
fi
wait "$suite_pid" || status=1
summary "$work/authorization.log"
# Every check of every authorization scenario must pass (no baseline: none needs a fixture).
if ! "$node" -e '
    const fs = require("fs"), path = require("path");
    const root = process.argv[1];
    let bad = 0, seen = 0;
    for (const d of fs.readdirSync(root)) {
        for (const c of JSON.parse(fs.readFileSync(path.join(root, d, "checks.json")))) {
            seen++;
            if (c.status !== "SUCCESS" && c.status !== "INFO") {
                bad++;
                console.log(`  ✗ ${d}: ${c.id} ${c.status} ${c.errorMessage ?? ""}`);
            }
        }
    }
    process.exit(bad || !seen ? 1 : 0);
' "$work/authorization"; then
    echo "conformance.sh: an authorization-server check did not pass (the log: $work/authorization.log)" >&2
    status=1
fi

if [ "$status" -ne 0 ]; then
    echo "== conformance: FAILED (server log tail below; --keep DIR keeps everything)"
    tail -n 40 "$work/server.log"
    exit 1
fi
echo "== conformance: passed"

#!/usr/bin/env bash
# Checks the simulator (crates/sim/, arcane-sim) against Arcane 2.8.0's OpenAPI document with
# schemathesis, an independent property-based API tester: response schemas, status codes and
# content types of every operation of third_party/arcane/openapi-v2.8.0.json.
#
#   scripts/schemathesis.sh [--examples N] [--seed N] [--phases LIST] [--mode MODE] [--keep DIR]
#
# It installs the pinned schemathesis (pip) when another version or none is installed, builds
# and starts arcane-sim on loopback (a free port), runs schemathesis against it (the simulator
# reset before every call, path parameters drawn mostly from the demo state:
# scripts/schemathesis/config.toml, arcane_sim_hooks.py), stops the simulator and judges the run with
# scripts/schemathesis/check.py: every failed check must be a known divergence of real Arcane
# from its document (scripts/schemathesis/known.yaml, docs/arcane-wire.md#checked-by-schemathesis),
# else the script exits 1. Defaults: 5 examples per operation, seed 1, phases
# examples,coverage,fuzzing, positive data (what CI runs). ARCANE_SIM_BIN=PATH uses an
# already built simulator instead of `cargo build -p arcane-sim --bin arcane-sim`.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
examples=5
seed=1
phases=examples,coverage,fuzzing
mode=positive
keep=
while [ $# -gt 0 ]; do
    case "$1" in
        --examples) examples=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --phases) phases=$2; shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        --keep) keep=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "schemathesis.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null)" != "$SCHEMATHESIS_VERSION" ]; then
    echo "== installing schemathesis==$SCHEMATHESIS_VERSION"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        "schemathesis==$SCHEMATHESIS_VERSION"
fi

bin=${ARCANE_SIM_BIN:-}
if [ -z "$bin" ]; then
    echo "== building arcane-sim"
    cargo --color never build --quiet -p arcane-sim --bin arcane-sim
    bin=target/debug/arcane-sim
fi

work=$(mktemp -d)
sim_pid=
cleanup() {
    if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
        kill -TERM "$sim_pid" 2>/dev/null || true
        wait "$sim_pid" 2>/dev/null || true
    fi
    if [ -n "$keep" ]; then
        mkdir -p "$keep" && cp -r "$work"/. "$keep"/
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# The simulator prints exactly one line once it accepts connections (crates/sim/README.md).
: >"$work/sim.out"
RUST_LOG=warn "$bin" --listen 127.0.0.1:0 >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
origin=
for _ in $(seq 1 100); do
    origin=$(sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\)$/\1/p' "$work/sim.out")
    [ -n "$origin" ] && break
    kill -0 "$sim_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$origin" ]; then
    echo "schemathesis.sh: arcane-sim did not start:" >&2
    cat "$work/sim.err" >&2
    exit 1
fi
echo "== schemathesis $SCHEMATHESIS_VERSION against arcane-sim at $origin" \
    "($examples examples per operation, seed $seed, phases $phases, $mode data)"

start=$(date +%s)
status=0
# GET /stream is Arcane's client stream: it never ends by design, so no response schema can be
# read from it; crates/sim/tests/client_stream.rs checks it line by line. Every other request has a
# time limit, so a hang is a failure, not a stuck run.
ARCANE_SIM_ORIGIN=$origin ARCANE_SIM_HOSTPORT=${origin#http://} SCHEMATHESIS_HOOKS=arcane_sim_hooks \
PYTHONPATH="$PWD/scripts/schemathesis${PYTHONPATH:+:$PYTHONPATH}" \
    schemathesis --no-color --config-file scripts/schemathesis/config.toml run \
    third_party/arcane/openapi-v2.8.0.json \
    --url "$origin/api" \
    --header 'X-API-Key: arcane-sim-key' \
    --checks response_schema_conformance,status_code_conformance,content_type_conformance \
    --mode "$mode" --phases "$phases" --max-examples "$examples" --seed "$seed" \
    --workers "${SCHEMATHESIS_WORKERS:-2}" --no-shrink --continue-on-failure \
    --exclude-path /stream --request-timeout 30 \
    --report ndjson --report-ndjson-path "$work/report.ndjson" \
    >"$work/schemathesis.log" 2>&1 || status=$?
end=$(date +%s)

# schemathesis exits 1 when any check failed (known divergences included); anything else is a
# failure of the tool itself.
if [ "$status" -gt 1 ] || [ ! -s "$work/report.ndjson" ]; then
    echo "schemathesis.sh: schemathesis failed (exit $status):" >&2
    tail -40 "$work/schemathesis.log" >&2
    exit 1
fi
echo "the run took $((end - start)) s"
python3 scripts/schemathesis/check.py "$work/report.ndjson" scripts/schemathesis/known.yaml \
    || { rc=$?; echo "(rerun with --keep DIR for schemathesis' full log)"; exit $rc; }

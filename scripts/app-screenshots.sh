#!/usr/bin/env bash
# Regenerates the MCP Apps view's screenshots in docs/apps/ (shown in README.md and
# docs/apps.md): each view light and dark, wide and narrow, rendered by the browser test's host
# (tests/browser/run.mjs) from the server's real results against the simulator's demo world.
# Needs Chromium (apt-get install chromium) and `npm ci --prefix tests/browser`. Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --workspace --bin arcane-mcp --bin arcane-sim
out=$(mktemp -d)
target/debug/arcane-sim >"$out/sim.out" 2>"$out/sim.err" &
sim=$!
trap 'kill "$sim" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do
  grep -q '^listening on ' "$out/sim.out" 2>/dev/null && break
  sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$out/sim.out")
[ -n "$url" ] || { echo "the simulator did not start: $(cat "$out/sim.err")" >&2; exit 1; }
ARCANE_SIM_URL="$url" ARCANE_SIM_KEY=arcane-sim-key \
  ARCANE_SPEC="$PWD/third_party/arcane/openapi-v2.8.0.json" \
  node tests/browser/run.mjs "$PWD/target/debug/arcane-mcp" screenshots "$PWD/docs/apps" >/dev/null
ls docs/apps

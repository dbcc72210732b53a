#!/usr/bin/env bash
# Tests what scripts/dist.sh built, as a user installs it, with no package registry
# (docs/install.md, "Testing the packages"). Run scripts/dist.sh first; then:
#
#   scripts/test-dist.sh            # dist/ of this repository
#   DIST=/path/to/dist scripts/test-dist.sh
#
# - the wheel into a fresh virtualenv (pip --no-index) and through `uvx --from WHEEL`
#   (offline): --version, and an MCP initialize + tools/list over stdio;
# - the npm tarballs into an empty prefix (no registry): `npx arcane-mcp-server` --version, MCP over
#   stdio, the exit code and SIGTERM passed through the launcher, the message when the
#   platform package is missing; `npx -y arcane-mcp-server` against a local verdaccio registry
#   holding only the two tarballs;
# - the packaged chart: helm lint --strict, rendered with several value sets, every manifest
#   validated against the Kubernetes 1.25 and 1.37 API schemas and the ServiceMonitor against
#   prometheus-operator's v1 types, bad values refused;
# - server.json against the MCP registry's published schema, the Docker MCP catalog entry
#   against that catalog's format (scripts/check_manifests.py);
# - the Homebrew formula's Ruby syntax (when ruby is installed: apt-get install ruby).
# Any profile's dist/ will do: .ci/run tests the one `scripts/dist.sh --profile dev` builds
# around the debug binary, the release workflow the release build's. The last line is
# `N passed, N failed`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
DIST="$(cd "${DIST:-$ROOT/dist}" && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# The pinned tools: uv, Helm's engine and the schemas (scripts/dist-tools.txt); verdaccio, npm's
# local registry, so that `npx -y arcane-mcp-server` itself is exercised against a registry holding
# only the two tarballs, prettier and the ServiceMonitor validator (scripts/dist-tools-npm/).
source scripts/dist-tools.sh
VERDACCIO="$DIST_TOOLS_NPM/node_modules/.bin/verdaccio"

passed=0
failed=0
step() { # step NAME COMMAND...: one more passed or failed check
  local name="$1"; shift
  if "$@"; then passed=$((passed + 1)); echo "ok: $name"; else failed=$((failed + 1)); echo "FAILED: $name"; fi
}

echo "== the checksums of dist/"
step "dist/SHA256SUMS matches the files" bash -c "cd '$DIST' && sha256sum --quiet -c SHA256SUMS"

echo "== installing the wheel and the npm packages"
if python3 scripts/test_dist.py "$DIST" "$DIST_TOOLS/bin/uv" "$VERDACCIO" | tee "$DIST/.test-dist.log"; then :; fi
read -r p f < <(tail -1 "$DIST/.test-dist.log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
rm -f "$DIST/.test-dist.log"
passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))

echo "== the packaged chart"
chart_tmp="$(mktemp -d)"
trap 'rm -rf "$chart_tmp"' EXIT
tar -xzf "$DIST"/chart/arcane-mcp-*.tgz -C "$chart_tmp"
step "the chart package lints, renders and validates" \
  "$DIST_TOOLS/bin/python" scripts/chart.py check "$chart_tmp/arcane-mcp"

echo "== server.json and the Docker MCP catalog entry, against their registries' formats"
if "$DIST_TOOLS/bin/python" scripts/check_manifests.py "$DIST_TOOLS_NPM/node_modules/.bin/prettier" | tee "$DIST/.test-dist.log"; then :; fi
read -r p f < <(tail -1 "$DIST/.test-dist.log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
rm -f "$DIST/.test-dist.log"
passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))

echo "== the Homebrew formula"
if command -v ruby >/dev/null; then
  step "Formula/arcane-mcp.rb is valid Ruby" ruby -c Formula/arcane-mcp.rb
else
  echo "skipped: ruby is not installed (apt-get install ruby)"
fi

echo
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]

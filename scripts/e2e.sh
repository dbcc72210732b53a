#!/usr/bin/env bash
# The whole test suite with the end-to-end group (CONTRIBUTING.md, "The test commands"): the
# README's test command, `cargo test --workspace`, with the test-support crate's `e2e` feature,
# which compiles in the tests that drive programs from outside the workspace (tests/e2e_*.rs;
# a feature of that dev-dependency, so the server's own build is the plain one). It first installs
# those programs, pinned: the MCP Python SDK (pip), the MCP TypeScript SDK, puppeteer-core and
# the ext-apps SDK, oidc-provider (npm ci, each package-lock.json), and Debian's Chromium and
# HAProxy (apt-get, when missing). A program that still cannot run fails its test, saying
# what to install; none is skipped.
#
#   scripts/e2e.sh                     # every test, the end-to-end group included (what CI runs)
#   scripts/e2e.sh --test integration e2e_   # only the end-to-end group
#
# Arguments go to `cargo test`. E2E_SKIP_INSTALL=1 runs the tests on what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "== [${SECONDS} s] $*"; }

if [ "${E2E_SKIP_INSTALL:-}" != 1 ]; then
  # e2e_sdk.rs drives the binary with the MCP Python SDK (the version is pinned there too).
  step "python: the MCP SDK"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'mcp==1.26.0'

  # e2e_sdk.rs drives it with the MCP TypeScript SDK too; package-lock.json pins it.
  step "node: the MCP TypeScript SDK"
  npm ci --prefix tests/typescript --no-audit --no-fund --loglevel=error

  # e2e_apps.rs renders the MCP Apps view in Debian's Chromium (as the machine's release pins
  # it) with puppeteer-core and the ext-apps SDK; tests/browser/package-lock.json pins those.
  # e2e_oauth_self.rs signs in through the same Chromium, and puts two replicas behind
  # Debian's HAProxy.
  step "browser: Chromium and puppeteer-core; HAProxy"
  if ! command -v chromium >/dev/null || ! command -v haproxy >/dev/null; then
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium haproxy >/dev/null
  fi
  npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error

  # e2e_oauth.rs validates tokens of a real OpenID Provider; package-lock.json pins it.
  step "node: oidc-provider"
  npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error
fi

step "tests, the end-to-end group included"
cargo test --workspace --features arcane-test-support/e2e "$@"
step "done"

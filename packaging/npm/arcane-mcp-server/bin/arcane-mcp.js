#!/usr/bin/env node
// The `arcane-mcp` (and `arcane-mcp-server`) command of the npm package `arcane-mcp-server`: runs the native binary that npm installed with
// the platform's optional dependency (`arcane-mcp-server-<platform>-<arch>`, chosen by its os/cpu
// fields) and gets out of the way. The child inherits stdin/stdout/stderr, so MCP's stdio
// bytes never pass through JavaScript; signals sent to this process are passed on; the
// child's exit code (or its fatal signal) becomes this process's.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const PLATFORMS = {
  "darwin-arm64": "arcane-mcp-server-darwin-arm64",
  "darwin-x64": "arcane-mcp-server-darwin-x64",
  "linux-arm64": "arcane-mcp-server-linux-arm64",
  "linux-x64": "arcane-mcp-server-linux-x64",
  "win32-x64": "arcane-mcp-server-win32-x64",
};

function binaryPath() {
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    fail(
      `arcane-mcp has no prebuilt binary for ${key} (built for: ${Object.keys(PLATFORMS).join(", ")}). ` +
        "Install it from source with `cargo install --git https://github.com/arcane-mcp/arcane-mcp arcane-mcp`, or run the container image.",
    );
  }
  const exe = process.platform === "win32" ? "arcane-mcp.exe" : "arcane-mcp";
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe);
  } catch {
    fail(
      `the package ${pkg}, which carries the arcane-mcp binary for ${key}, is not installed. ` +
        "npm skips optional dependencies with --no-optional / --omit=optional: reinstall without it " +
        "(npm install arcane-mcp-server, or npx -y arcane-mcp-server).",
    );
  }
}

function fail(message) {
  process.stderr.write(`arcane-mcp: ${message}\n`);
  process.exit(1);
}

const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit", windowsHide: true });

// A client stops a stdio server by closing stdin or with SIGTERM/SIGINT; either must reach the
// server, which then finishes its in-flight work. The launcher itself never dies of these
// signals while the child runs: it waits for the child and mirrors how it ended.
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGBREAK"];
const handlers = new Map();
for (const signal of FORWARDED) {
  const handler = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  try {
    process.on(signal, handler);
    handlers.set(signal, handler);
  } catch {
    // A signal this platform does not have (SIGBREAK off Windows, SIGQUIT on Windows).
  }
}

child.on("error", (err) => {
  fail(`could not start ${err.path || "the binary"}: ${err.message}`);
});

child.on("exit", (code, signal) => {
  for (const [sig, handler] of handlers) process.removeListener(sig, handler);
  if (signal) {
    // Die of the same signal, so whoever started us sees what the server's end was.
    process.kill(process.pid, signal);
    // Should the signal not end us (e.g. ignored by the parent), exit as a shell reports it.
    setTimeout(() => process.exit(128 + (require("node:os").constants.signals[signal] || 0)), 1000);
  } else {
    process.exit(code ?? 1);
  }
});

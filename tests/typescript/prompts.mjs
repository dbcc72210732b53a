// Drives `arcane-mcp demo` with the official MCP TypeScript SDK over stdio: its prompts, as
// tests/python/prompts.py does (the same report, for tests/e2e_sdk.rs to compare).
//
// Usage: node prompts.mjs BINARY
// Per surface and client profile (and the read-only mode): prompts/list, completion of each
// argument from the simulator's names, prompts/get with those values, and whether each text
// names only served actions (tools/list and arcane://tools). Then hot reload: an overlay
// written while the server runs adds a prompt (the client is told the list changed), and a
// broken prompt entry keeps the last good catalog.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [binary] = process.argv.slice(2);

const RUNS = {
  dynamic: ["--tool-surface", "dynamic"],
  meta: ["--tool-surface", "meta"],
  individual: ["--tool-surface", "individual"],
  "individual-flat": ["--tool-surface", "individual", "--client-profile", "flat"],
  "dynamic-read-only": ["--tool-surface", "dynamic", "--read-only"],
};

function namedActions(surface, text) {
  if (surface.startsWith("dynamic")) {
    return [...text.matchAll(/`([a-z][a-z0-9_]*\.[a-z0-9_]+)`/g)].map((m) => `arcane_execute_action ${m[1]}`);
  }
  if (surface === "meta") {
    return [...text.matchAll(/`(arcane_[a-z0-9_]+)` \(action `([a-z0-9_]+)`\)/g)].map((m) => `${m[1]} ${m[2]}`);
  }
  return [...text.matchAll(/`(arcane_[a-z0-9_]+)`/g)].map((m) => m[1]);
}

function servedSpellings(surface, index, tools) {
  const out = new Set();
  for (const a of index.actions) {
    if (!tools.has(surface.startsWith("dynamic") ? "arcane_execute_action" : a.tool)) continue;
    if (surface.startsWith("dynamic")) out.add(`arcane_execute_action ${a.id}`);
    else if (surface === "meta") out.add(`${a.tool} ${a.id.split(".").slice(1).join(".")}`);
    else out.add(a.tool);
  }
  return out;
}

function textOf(result) {
  return result.messages.filter((m) => m.content.type === "text").map((m) => m.content.text).join("\n");
}

async function connect(args, stderr = "ignore") {
  const transport = new StdioClientTransport({
    command: binary,
    args: ["demo", ...args],
    env: { PATH: process.env.PATH ?? "", ARCANE_MCP_LOG: stderr === "ignore" ? "error" : "info" },
    stderr,
  });
  const client = new Client({ name: "arcane-mcp-prompts", version: "1.0.0" });
  return { client, transport };
}

async function surfaceRun(name, args) {
  const { client, transport } = await connect(args);
  await client.connect(transport);
  const out = { prompts: {}, unserved: [], named: 0 };
  const caps = client.getServerCapabilities();
  out.list_changed = caps?.prompts?.listChanged === true;
  out.completions = caps?.completions !== undefined;
  const tools = new Set((await client.listTools()).tools.map((t) => t.name));
  const index = JSON.parse((await client.readResource({ uri: "arcane://tools" })).contents[0].text);
  const served = servedSpellings(name, index, tools);
  for (const p of (await client.listPrompts()).prompts) {
    const entry = { title: p.title, arguments: {} };
    const given = {};
    for (const a of p.arguments ?? []) {
      const done = await client.complete({
        ref: { type: "ref/prompt", name: p.name },
        argument: { name: a.name, value: "" },
      });
      const values = done.completion.values;
      entry.arguments[a.name] = values;
      if (values.length) given[a.name] = values[0];
      else if (a.required) given[a.name] = "example";
    }
    const result = await client.getPrompt({ name: p.name, arguments: given });
    const text = textOf(result);
    entry.roles = result.messages.map((m) => m.role);
    entry.text = text;
    const names = namedActions(name, text);
    entry.named = names.length;
    out.named += names.length;
    for (const n of names) if (!served.has(n)) out.unserved.push(`${p.name}: ${n}`);
    out.prompts[p.name] = entry;
  }
  try {
    await client.getPrompt({ name: "troubleshoot-container", arguments: {} });
    out.missing_error = null;
  } catch (e) {
    out.missing_error = String(e.message ?? e);
  }
  await client.close();
  return out;
}

const OURS =
  "prompts:\n  restart-web:\n    description: Restart the web container and check it\n" +
  "    arguments:\n      - {name: container, description: Which one, required: true, complete: containers}\n" +
  "    template: Restart {{container}} with {{container.restart}}.\n";
const BROKEN =
  "prompts:\n  restart-web:\n    description: Restart the web container and check it\n" +
  "    template: Restart {{nobody}} with {{container.restart}}.\n";

async function reloadRun() {
  const overrides = mkdtempSync(join(tmpdir(), "prompts-overlay-"));
  const { client, transport } = await connect(["--overrides", overrides], "pipe");
  let log = "";
  transport.stderr.on("data", (chunk) => {
    log += chunk.toString();
  });
  let changed;
  const told = new Promise((resolve) => {
    changed = resolve;
  });
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => changed());
  await client.connect(transport);
  const out = {};
  const before = new Set((await client.listPrompts()).prompts.map((p) => p.name));
  writeFileSync(join(overrides, "ours.yaml"), OURS);
  // A hang guard, not a timing assertion.
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("no prompts list_changed")), 60000);
  });
  await Promise.race([told, guard]);
  clearTimeout(timer);
  const after = (await client.listPrompts()).prompts.map((p) => p.name);
  out.added = after.filter((n) => !before.has(n)).sort();
  out.text = textOf(await client.getPrompt({ name: "restart-web", arguments: { container: "web-1" } }));
  writeFileSync(join(overrides, "ours.yaml"), BROKEN);
  for (let i = 0; i < 600 && !log.includes("reload failed"); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  out.failure_logged = log.split("\n").filter((l) => l.includes("reload failed")).slice(0, 1);
  out.kept = (await client.listPrompts()).prompts.some((p) => p.name === "restart-web");
  await client.close();
  return out;
}

const report = {};
for (const [name, args] of Object.entries(RUNS)) report[name] = await surfaceRun(name, args);
report.reload = await reloadRun();
console.log(JSON.stringify(report));

// Drives `arcane-mcp --transport http` with the official MCP TypeScript SDK's Streamable HTTP
// client: list, call, a resource, progress of a stream, a wrong token and a foreign Origin
// refused; with OVERRIDES_DIR (the server's `--overrides`) and SIM_URL (the simulator's base
// URL) also a call cancelled mid-stream (the simulator's stream to Arcane seen aborted) and the
// list-changed notifications (tools, resources, prompts) after a hot reload (an overlay written into OVERRIDES_DIR).
//
// Usage: node http_client.mjs URL TOKEN SURFACE [OVERRIDES_DIR SIM_URL]
// Prints one JSON object. Run by tests/e2e_sdk.rs.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ResourceListChangedNotificationSchema,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [url, token, surface, overrides, sim] = process.argv.slice(2);

const CALLS = {
  dynamic: ["arcane_execute_action", { action: "container.list", params: {} }],
  meta: ["arcane_container", { action: "list", params: {} }],
  individual: ["arcane_container_list", {}],
};
const PULL = {
  dynamic: ["arcane_execute_action", { action: "image.pull", params: { imageName: "redis:7.2-alpine" } }],
  meta: ["arcane_image", { action: "pull", params: { imageName: "redis:7.2-alpine" } }],
  individual: ["arcane_image_pull", { imageName: "redis:7.2-alpine" }],
};

// Deploying is asked (changes-workload); this client cannot ask, so the model confirms.
const UP = {
  dynamic: ["arcane_execute_action", { action: "project.up", params: { projectId: "webshop" }, confirm: true }],
  meta: ["arcane_project", { action: "up", params: { projectId: "webshop" }, confirm: true }],
  individual: ["arcane_project_up", { projectId: "webshop", confirm: true }],
};
// Generous guards against a hang, not timing assertions.
const WAIT_STEPS = 600;
const STEP_MS = 100;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const textOf = (r) => r.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-http", version: "1.0.0" });
const changed = new Set();
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed.add("tools"));
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => changed.add("resources"));
client.setNotificationHandler(PromptListChangedNotificationSchema, () => changed.add("prompts"));
await client.connect(transport);
const out = { server: client.getServerVersion()?.name, session: Boolean(transport.sessionId) };
const promptNames = async () => (await client.listPrompts()).prompts.map((p) => p.name);
out.prompts_before = await promptNames();
const { tools } = await client.listTools();
out.tools = tools.length;
const [name, args] = CALLS[surface];
const result = await client.callTool({ name, arguments: args });
out.is_error = Boolean(result.isError);
out.text = textOf(result);
const resource = await client.readResource({ uri: "arcane://tools" });
out.resource = resource.contents.length;
let progress = 0;
const [pullName, pullArgs] = PULL[surface];
const pulled = await client.callTool({ name: pullName, arguments: pullArgs }, undefined, {
  onprogress: () => {
    progress += 1;
  },
});
out.pull_error = Boolean(pulled.isError);
out.progress = progress;
if (sim !== undefined) {
  // A slow stream cancelled mid-way: the SDK sends notifications/cancelled on abort.
  await fetch(`${sim}/__sim/config`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ streamPaceMs: 300 }),
  });
  const [upName, upArgs] = UP[surface];
  const abort = new AbortController();
  const pending = client.callTool({ name: upName, arguments: upArgs }, undefined, { signal: abort.signal });
  await sleep(700);
  abort.abort("user stopped it");
  await pending.catch(() => {});
  out.aborted = false;
  for (let i = 0; i < WAIT_STEPS && !out.aborted; i++) {
    const streams = await (await fetch(`${sim}/__sim/streams`)).json();
    out.aborted = streams.some((s) => (s.path ?? "").endsWith("/up") && s.aborted === true);
    if (!out.aborted) await sleep(STEP_MS);
  }
  await fetch(`${sim}/__sim/config`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ streamPaceMs: 20 }),
  });
  // A hot reload: every open session hears that the lists changed.
  writeFileSync(
    join(overrides, "maintenance.yaml"),
    'actions:\n  container.restart: {exclude: "withdrawn for maintenance"}\n',
  );
  for (let i = 0; i < WAIT_STEPS && !(changed.has("tools") && changed.has("resources") && changed.has("prompts")); i++) {
    await sleep(STEP_MS);
  }
  out.list_changed = [...changed].sort();
  out.tools_after_reload = (await client.listTools()).tools.length;
  // The prompt whose job restarts a container goes with container.restart.
  out.prompts_after_reload = await promptNames();
}
await client.close();

const wrong = await fetch(url, {
  method: "POST",
  headers: {
    Authorization: "Bearer wrong",
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
});
out.wrong_token_status = wrong.status;
out.challenge = wrong.headers.get("www-authenticate") ?? "";
const foreign = await fetch(url, {
  method: "POST",
  headers: {
    Authorization: `Bearer ${token}`,
    Origin: "https://evil.example",
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
});
out.foreign_origin_status = foreign.status;
console.log(JSON.stringify(out));

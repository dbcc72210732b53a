// Drives `arcane-mcp demo` with the official MCP TypeScript SDK over stdio: its live resources,
// as tests/python/live.py does (the same report, for tests/e2e_sdk.rs to check alike).
//
// Usage: node live.mjs BINARY
// Subscribes (resources/subscribe) to a container, a project and the dashboard of the demo's
// simulator, stops the container and then takes the project down with tools/call, and records
// the notifications/resources/updated the client hears after each step.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [binary] = process.argv.slice(2);
// Generous guards against a hang, not timing assertions.
const WAIT_STEPS = 600;
const STEP_MS = 100;
const WEB = "arcane://container/web-1";
const PROJECT = "arcane://project/webshop";
const DASHBOARD = "arcane://dashboard";

const heard = [];
const count = (uri) => heard.filter((u) => u === uri).length;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(uri, seen) {
  for (let i = 0; i < WAIT_STEPS; i++) {
    if (count(uri) > seen) return true;
    await sleep(STEP_MS);
  }
  return false;
}

const transport = new StdioClientTransport({
  command: binary,
  args: ["demo", "--tool-surface", "dynamic", "--subscription-poll-ms", "250"],
  env: { PATH: process.env.PATH ?? "", ARCANE_MCP_LOG: "error" },
  stderr: "ignore",
});
const client = new Client({ name: "arcane-mcp-live", version: "1.0.0" });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  heard.push(n.params.uri);
});
await client.connect(transport);

async function run(action, params) {
  const result = await client.callTool({
    name: "arcane_execute_action",
    arguments: { action, params, confirm: true },
  });
  return !result.isError;
}

const out = {};
out.subscribe = client.getServerCapabilities()?.resources?.subscribe === true;
for (const uri of [WEB, PROJECT, DASHBOARD]) {
  await client.subscribeResource({ uri });
}
// Each subscription was answered once its first state was known: from here on every change
// is heard.
let dashboard = count(DASHBOARD);
out.stopped = await run("container.stop", { containerId: "web-1" });
out.container_heard = await until(WEB, 0);
out.dashboard_heard_after_stop = await until(DASHBOARD, dashboard);
// The container's new state is what a read now gives.
let state = JSON.parse((await client.readResource({ uri: WEB })).contents[0].text);
state = (state.value ?? state).state;
out.container_state = typeof state === "object" && state !== null ? state.status : state;
dashboard = count(DASHBOARD);
const project = count(PROJECT);
out.down = await run("project.down", { projectId: "webshop" });
out.dashboard_heard_after_down = await until(DASHBOARD, dashboard);
out.project_heard_after_down = await until(PROJECT, project);
await client.unsubscribeResource({ uri: WEB });
out.heard = [...new Set(heard)].sort();
await client.close();
console.log(JSON.stringify(out));

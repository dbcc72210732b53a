// Drives `arcane-mcp --transport http` with the official MCP TypeScript SDK's Streamable HTTP
// client: list, call, a resource, progress of a stream, and a wrong token refused.
//
// Usage: node http_client.mjs URL TOKEN SURFACE
// Prints one JSON object. Run by tests/cli.rs.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, surface] = process.argv.slice(2);

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

const textOf = (r) => r.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-http", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion()?.name, session: Boolean(transport.sessionId) };
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

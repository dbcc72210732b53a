// Calls every tool with an output schema on `arcane-mcp demo` in the flat client profile with
// the official MCP TypeScript SDK, whose Client.callTool validates each result's
// structuredContent against the tool's declared outputSchema (it throws when one does not fit).
//
// Usage: node flat_sweep.mjs BINARY SPEC
// Prints one JSON object, as tests/python/flat_sweep.py does. Run by tests/e2e_sdk.rs.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [binary, spec] = process.argv.slice(2);

// The demo world's IDs, by parameter name (as tests/server_output_schemas.rs uses them).
const KNOWN = {
  containerId: "web-1",
  projectId: "webshop",
  imageId: "nginx:1.27-alpine",
  name: "nginx:1.27-alpine",
  volumeName: "webshop_db-data",
  networkId: "webshop_default",
  serviceId: "edge-proxy",
  environmentId: "0",
};

function sample(name, schema) {
  if (name in KNOWN) return KNOWN[name];
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const kind = schema.type ?? "string";
  const description = schema.description ?? "";
  if (kind === "string" && description.includes("JSON text of an array")) return "[]";
  if (kind === "string" && description.includes("JSON text of")) return "{}";
  return { integer: 1, number: 1, boolean: false, array: [] }[kind] ?? "demo";
}

function rank(tool) {
  const a = tool.annotations ?? {};
  return a.readOnlyHint ? 0 : a.destructiveHint ? 2 : 1;
}

const transport = new StdioClientTransport({
  command: binary,
  args: ["demo", "--spec", spec, "--tool-surface", "individual", "--output-schemas=on",
    "--client-profile", "flat"],
  env: { PATH: process.env.PATH ?? "", ARCANE_MCP_LOG: "error" },
  stderr: "ignore",
});
const client = new Client({ name: "arcane-mcp-flat-sweep", version: "1.0.0" });
await client.connect(transport);
const report = { tools: 0, declared: 0, called: 0, ok: 0, errors: 0, rejected: [] };
const { tools } = await client.listTools();
report.tools = tools.length;
const declared = tools
  .filter((t) => t.outputSchema)
  .sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
report.declared = declared.length;
for (const tool of declared) {
  const props = tool.inputSchema?.properties ?? {};
  const args = {};
  for (const n of tool.inputSchema?.required ?? []) args[n] = sample(n, props[n] ?? {});
  if ("confirm" in props) args.confirm = true;
  report.called += 1;
  try {
    const result = await client.callTool({ name: tool.name, arguments: args });
    if (result.isError) report.errors += 1;
    else report.ok += 1;
  } catch (e) {
    report.rejected.push({ tool: tool.name, error: String(e?.message ?? e).slice(0, 500) });
  }
}
await client.close();
console.log(JSON.stringify(report));

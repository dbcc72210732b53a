"""Calls every tool with an output schema on `arcane-mcp demo` in the flat client profile with
the official MCP Python SDK, which validates each result's structuredContent against the tool's
declared outputSchema (it raises when a result does not fit).

Usage: python3 flat_sweep.py BINARY SPEC
Prints one JSON object: tools listed, tools with an output schema, calls made, successful
results, error results, and the rejections (tool and the SDK's message). Run by tests/e2e_sdk.rs.
Reading actions go first and destructive ones last, so the demo world lasts as long as it can.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# The demo world's IDs, by parameter name (as tests/server_output_schemas.rs uses them).
KNOWN = {
    "containerId": "web-1",
    "projectId": "webshop",
    "imageId": "nginx:1.27-alpine",
    "name": "nginx:1.27-alpine",
    "volumeName": "webshop_db-data",
    "networkId": "webshop_default",
    "serviceId": "edge-proxy",
    "environmentId": "0",
}


def sample(name, schema):
    """A value for a required parameter, as the flat tool declares it."""
    if name in KNOWN:
        return KNOWN[name]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "string")
    description = schema.get("description", "")
    if kind == "string" and "JSON text of an array" in description:
        return "[]"
    if kind == "string" and "JSON text of" in description:
        return "{}"
    return {"integer": 1, "number": 1, "boolean": False, "array": []}.get(kind, "demo")


def order(tool):
    hints = tool.annotations
    read_only = bool(hints and hints.readOnlyHint)
    destructive = bool(hints and hints.destructiveHint)
    return (0 if read_only else 2 if destructive else 1, tool.name)


async def main():
    binary, spec = sys.argv[1], sys.argv[2]
    params = StdioServerParameters(
        command=binary,
        args=[
            "demo",
            "--spec",
            spec,
            "--tool-surface",
            "individual",
            "--output-schemas=on",
            "--client-profile",
            "flat",
        ],
        env={"PATH": os.environ.get("PATH", ""), "ARCANE_MCP_LOG": "error"},
    )
    report = {"tools": 0, "declared": 0, "called": 0, "ok": 0, "errors": 0, "rejected": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            report["tools"] = len(tools)
            declared = sorted((t for t in tools if t.outputSchema), key=order)
            report["declared"] = len(declared)
            for tool in declared:
                schema = tool.inputSchema or {}
                props = schema.get("properties", {})
                args = {n: sample(n, props.get(n, {})) for n in schema.get("required", [])}
                if "confirm" in props:
                    args["confirm"] = True
                report["called"] += 1
                try:
                    result = await session.call_tool(tool.name, args)
                except RuntimeError as e:
                    report["rejected"].append({"tool": tool.name, "error": str(e)[:500]})
                    continue
                if result.isError:
                    report["errors"] += 1
                else:
                    report["ok"] += 1
    print(json.dumps(report))


asyncio.run(asyncio.wait_for(main(), timeout=300))

"""Drives `arcane-mcp demo` with the official MCP Python SDK over stdio, on every tool surface.

Usage: python3 mcp_client.py BINARY DIR
Starts the demo as a client config does, with no --spec (the document built into the binary),
in the working directory DIR. Prints one JSON object: per surface, the tools listed and the text of a container.list call
(plus a search on the dynamic surface and a resource read). Run by tests/e2e_sdk.rs.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def surface_run(binary, cwd, surface):
    params = StdioServerParameters(
        command=binary,
        args=["demo", "--tool-surface", surface],
        env={"PATH": os.environ.get("PATH", ""), "ARCANE_MCP_LOG": "warn"},
        cwd=cwd,
    )
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.serverInfo.name
            tools = await session.list_tools()
            names = [t.name for t in tools.tools]
            out["tools"] = len(names)
            if surface == "dynamic":
                found = await session.call_tool("arcane_find_action", {"query": "restart container"})
                out["find"] = text_of(found)
                result = await session.call_tool(
                    "arcane_execute_action", {"action": "container.list", "params": {}}
                )
                resource = await session.read_resource("arcane://tools")
                out["resource"] = len(resource.contents)
            elif surface == "meta":
                result = await session.call_tool("arcane_container", {"action": "list", "params": {}})
            else:
                result = await session.call_tool("arcane_container_list", {})
            out["has_tool"] = {
                "dynamic": "arcane_execute_action",
                "meta": "arcane_container",
                "individual": "arcane_container_list",
            }[surface] in names
            out["is_error"] = bool(result.isError)
            out["text"] = text_of(result)
            out["structured_items"] = len((result.structuredContent or {}).get("items", []))
    return out


async def main():
    binary, cwd = sys.argv[1], sys.argv[2]
    report = {}
    for surface in ("dynamic", "meta", "individual"):
        report[surface] = await asyncio.wait_for(surface_run(binary, cwd, surface), timeout=60)
    print(json.dumps(report))


asyncio.run(main())

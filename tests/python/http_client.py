"""Drives `arcane-mcp --transport http` with the official MCP Python SDK's Streamable HTTP client.

Usage: python3 http_client.py URL TOKEN SURFACE [ARCANE_KEY]
Prints one JSON object: the tools listed, the text of a container.list call, a resource read,
a completion, and whether a wrong token was refused. Run by tests/cli.rs.
"""

import asyncio
import json
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


CALLS = {
    "dynamic": ("arcane_execute_action", {"action": "container.list", "params": {}}),
    "meta": ("arcane_container", {"action": "list", "params": {}}),
    "individual": ("arcane_container_list", {}),
}


async def main():
    url, token, surface = sys.argv[1], sys.argv[2], sys.argv[3]
    headers = {"Authorization": f"Bearer {token}"}
    if len(sys.argv) > 4:
        headers["X-Arcane-API-Key"] = sys.argv[4]
    out = {}
    async with streamablehttp_client(url, headers=headers) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.serverInfo.name
            out["session"] = bool(session_id())
            tools = await session.list_tools()
            out["tools"] = len(tools.tools)
            name, args = CALLS[surface]
            result = await session.call_tool(name, args)
            out["is_error"] = bool(result.isError)
            out["text"] = text_of(result)
            resource = await session.read_resource("arcane://tools")
            out["resource"] = len(resource.contents)
    async with httpx.AsyncClient() as http:
        r = await http.post(
            url,
            headers={"Authorization": "Bearer wrong", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        out["wrong_token_status"] = r.status_code
        out["challenge"] = r.headers.get("www-authenticate", "")
    print(json.dumps(out))


asyncio.run(main())

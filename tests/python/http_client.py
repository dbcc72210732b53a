"""Drives `arcane-mcp --transport http` with the official MCP Python SDK's Streamable HTTP client.

Usage: python3 http_client.py URL TOKEN SURFACE [OVERRIDES_DIR SIM_URL]
Prints one JSON object: the tools listed, the text of a container.list call, a resource read,
progress of a stream, and whether a wrong token was refused. With OVERRIDES_DIR (the server's
`--overrides`) and SIM_URL (the simulator's base URL) also: a call cancelled mid-stream (the
simulator's stream to Arcane is seen aborted) and the list-changed notifications after a hot
reload (an overlay written into OVERRIDES_DIR). Run by tests/e2e_sdk.rs.
"""

import asyncio
import json
import os
import sys

import httpx
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


CALLS = {
    "dynamic": ("arcane_execute_action", {"action": "container.list", "params": {}}),
    "meta": ("arcane_container", {"action": "list", "params": {}}),
    "individual": ("arcane_container_list", {}),
}
PULL = {
    "dynamic": ("arcane_execute_action", {"action": "image.pull", "params": {"imageName": "redis:7.2-alpine"}}),
    "meta": ("arcane_image", {"action": "pull", "params": {"imageName": "redis:7.2-alpine"}}),
    "individual": ("arcane_image_pull", {"imageName": "redis:7.2-alpine"}),
}
# Deploying is asked (changes-workload); this client cannot ask, so the model confirms.
UP = {
    "dynamic": ("arcane_execute_action", {"action": "project.up", "params": {"projectId": "webshop"}, "confirm": True}),
    "meta": ("arcane_project", {"action": "up", "params": {"projectId": "webshop"}, "confirm": True}),
    "individual": ("arcane_project_up", {"projectId": "webshop", "confirm": True}),
}

# Generous guards against a hang, not timing assertions.
WAIT_STEPS = 600
STEP = 0.1


async def main():
    url, token, surface = sys.argv[1], sys.argv[2], sys.argv[3]
    overrides, sim = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)
    headers = {"Authorization": f"Bearer {token}"}
    out = {}
    changed = set()

    async def on_message(message):
        if isinstance(message, types.ServerNotification):
            if isinstance(message.root, types.ToolListChangedNotification):
                changed.add("tools")
            elif isinstance(message.root, types.ResourceListChangedNotification):
                changed.add("resources")
            elif isinstance(message.root, types.PromptListChangedNotification):
                changed.add("prompts")

    async with streamablehttp_client(url, headers=headers) as (read, write, session_id):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            out["server"] = init.serverInfo.name
            out["session"] = bool(session_id())
            tools = await session.list_tools()
            out["tools"] = len(tools.tools)
            out["prompts_before"] = [p.name for p in (await session.list_prompts()).prompts]
            name, args = CALLS[surface]
            result = await session.call_tool(name, args)
            out["is_error"] = bool(result.isError)
            out["text"] = text_of(result)
            resource = await session.read_resource("arcane://tools")
            out["resource"] = len(resource.contents)

            progress = []

            async def on_progress(value, total, message):
                progress.append(value)

            name, args = PULL[surface]
            pulled = await session.call_tool(name, args, progress_callback=on_progress)
            out["pull_error"] = bool(pulled.isError)
            out["progress"] = len(progress)

            if sim is not None:
                out["aborted"] = await cancel_a_stream(session, surface, sim)
                with open(os.path.join(overrides, "maintenance.yaml"), "w") as f:
                    f.write('actions:\n  container.restart: {exclude: "withdrawn for maintenance"}\n')
                for _ in range(WAIT_STEPS):
                    if {"tools", "resources", "prompts"} <= changed:
                        break
                    await asyncio.sleep(STEP)
                out["list_changed"] = sorted(changed)
                # The reloaded catalog is the one served: the tool list reflects the withdrawal.
                tools = await session.list_tools()
                out["tools_after_reload"] = len(tools.tools)
                # The prompt whose job restarts a container goes with container.restart.
                out["prompts_after_reload"] = [p.name for p in (await session.list_prompts()).prompts]
    async with httpx.AsyncClient() as http:
        r = await http.post(
            url,
            headers={"Authorization": "Bearer wrong", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        out["wrong_token_status"] = r.status_code
        out["challenge"] = r.headers.get("www-authenticate", "")
        r = await http.post(
            url,
            headers={
                "Authorization": f"Bearer {token}",
                "Origin": "https://evil.example",
                "Accept": "application/json, text/event-stream",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        out["foreign_origin_status"] = r.status_code
    print(json.dumps(out))


async def cancel_a_stream(session, surface, sim):
    """Starts a slow stream (project.up), cancels it with `notifications/cancelled` and reports
    whether the simulator saw its request to Arcane dropped."""
    async with httpx.AsyncClient() as http:
        await http.post(f"{sim}/__sim/config", json={"streamPaceMs": 300})
        name, args = UP[surface]
        # The SDK numbers requests in order; this call gets the next number.
        request_id = session._request_id
        call = asyncio.create_task(session.call_tool(name, args))
        await asyncio.sleep(0.7)
        await session.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    params=types.CancelledNotificationParams(requestId=request_id, reason="user stopped it")
                )
            )
        )
        call.cancel()
        try:
            await call
        except (asyncio.CancelledError, Exception):
            pass
        aborted = False
        for _ in range(WAIT_STEPS):
            streams = (await http.get(f"{sim}/__sim/streams")).json()
            aborted = any(s.get("path", "").endswith("/up") and s.get("aborted") is True for s in streams)
            if aborted:
                break
            await asyncio.sleep(STEP)
        await http.post(f"{sim}/__sim/config", json={"streamPaceMs": 20})
        return aborted


asyncio.run(main())

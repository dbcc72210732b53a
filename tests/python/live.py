"""Drives `arcane-mcp demo` with the official MCP Python SDK over stdio: its live resources.

Usage: python3 live.py BINARY
Subscribes (resources/subscribe) to a container, a project and the dashboard of the demo's
simulator, stops the container and then takes the project down with tools/call, and records the
notifications/resources/updated the client hears after each step. Prints one JSON object;
tests/e2e_sdk.rs asserts on it.
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Generous guards against a hang, not timing assertions.
WAIT_STEPS = 600
STEP = 0.1
WEB = "arcane://container/web-1"
PROJECT = "arcane://project/webshop"
DASHBOARD = "arcane://dashboard"


async def main():
    binary = sys.argv[1]
    params = StdioServerParameters(
        command=binary,
        args=["demo", "--tool-surface", "dynamic", "--subscription-poll-ms", "250"],
        env={"PATH": os.environ.get("PATH", ""), "ARCANE_MCP_LOG": "warn"},
    )
    heard = []

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ResourceUpdatedNotification
        ):
            heard.append(str(message.root.params.uri))

    async def until(uri, seen):
        for _ in range(WAIT_STEPS):
            if heard.count(uri) > seen:
                return True
            await asyncio.sleep(STEP)
        return False

    async def run(action, params):
        result = await session.call_tool(
            "arcane_execute_action", {"action": action, "params": params, "confirm": True}
        )
        return not result.isError

    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            res = init.capabilities.resources
            out["subscribe"] = bool(res and res.subscribe)
            for uri in (WEB, PROJECT, DASHBOARD):
                await session.subscribe_resource(uri)
            # Each subscription was answered once its first state was known: from here on
            # every change is heard.
            dashboard = heard.count(DASHBOARD)
            out["stopped"] = await run("container.stop", {"containerId": "web-1"})
            out["container_heard"] = await until(WEB, 0)
            out["dashboard_heard_after_stop"] = await until(DASHBOARD, dashboard)
            # The container's new state is what a read now gives.
            state = json.loads((await session.read_resource(WEB)).contents[0].text)
            state = (state.get("value") or state).get("state")
            out["container_state"] = state.get("status") if isinstance(state, dict) else state
            dashboard = heard.count(DASHBOARD)
            project = heard.count(PROJECT)
            out["down"] = await run("project.down", {"projectId": "webshop"})
            out["dashboard_heard_after_down"] = await until(DASHBOARD, dashboard)
            out["project_heard_after_down"] = await until(PROJECT, project)
            await session.unsubscribe_resource(WEB)
            out["heard"] = sorted(set(heard))
    print(json.dumps(out))


asyncio.run(main())

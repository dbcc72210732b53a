"""MCP tasks of the 2025-11-25 protocol (docs/tasks.md) with the official MCP Python SDK's
experimental task client (`session.experimental`), over stdio or Streamable HTTP.

Usage: python3 tasks_client.py stdio SIM_URL -- BINARY ARGS...
       python3 tasks_client.py http SIM_URL URL TOKEN OTHER_TOKEN
The server runs with `--max-tasks 1` on the dynamic surface. Prints one JSON object of what
was seen: the `tasks` capability and the tools' `execution.taskSupport`, a slow pull as a task
(its progress, statuses and result against the plain call's), tasks/list, a cancel mid-pull
(the simulator's stream seen aborted), a failed stream, a TTL expiry, the per-caller limit,
an instant action and the search tool as tasks, a destructive task confirmed and one declined;
over HTTP also another token's view of a task and a new session reading the result of a task
whose session closed. Run by tests/e2e_sdk.rs, which checks the report and the audit log.
"""

import asyncio
import json
import re
import sys
import time

import httpx
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

TOOL = "arcane_execute_action"
RELATED = "io.modelcontextprotocol/related-task"
# Generous guards against a hang, not timing assertions.
WAIT_STEPS = 1200
STEP = 0.05


def pull(image="redis:7.2-alpine"):
    return {"action": "image.pull", "params": {"imageName": image}}


PRUNE = {
    "action": "system.prune",
    "params": {"images": {"mode": "dangling"}, "containers": {"mode": "stopped"}},
}


def dump(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def same(a, b):
    """Whether two results are the same but for the IDs the simulator gives each activity
    (a plain call and its task are two calls: each its own activity)."""
    return UUID.sub("ID", json.dumps(a, sort_keys=True)) == UUID.sub("ID", json.dumps(b, sort_keys=True))


def text_of(result):
    return "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")


def error_of(e):
    return {"code": e.error.code, "message": e.error.message}


class Sim:
    def __init__(self, base):
        self.base = base
        self.http = httpx.AsyncClient()

    async def reset(self, pace=None):
        await self.http.post(f"{self.base}/__sim/reset")
        if pace is not None:
            await self.http.post(f"{self.base}/__sim/config", json={"streamPaceMs": pace})

    async def fault(self, fault):
        await self.http.post(f"{self.base}/__sim/faults", json=fault)

    async def streams(self):
        return (await self.http.get(f"{self.base}/__sim/streams")).json()

    async def writes(self):
        reqs = (await self.http.get(f"{self.base}/__sim/requests")).json()
        return [r for r in reqs if r.get("method") not in ("GET", "HEAD")]

    async def until_pulling(self):
        for _ in range(WAIT_STEPS):
            if any(s.get("path", "").endswith("/pull") for s in await self.streams()):
                return True
            await asyncio.sleep(STEP)
        return False

    async def pull_aborted(self):
        for _ in range(WAIT_STEPS):
            if any(s.get("path", "").endswith("/pull") and s.get("aborted") is True for s in await self.streams()):
                return True
            await asyncio.sleep(STEP)
        return False


class Client:
    """One session's handlers: progress notifications seen, and the person's answer."""

    def __init__(self, answer="accept"):
        self.progress = []
        self.answer = answer
        self.asked = 0

    async def on_message(self, message):
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ProgressNotification):
            self.progress.append(message.root.params.model_dump(mode="json", by_alias=True))

    async def on_elicit(self, context, params):
        self.asked += 1
        if self.answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="decline")

    def session(self, read, write):
        return ClientSession(read, write, message_handler=self.on_message, elicitation_callback=self.on_elicit)


async def settle(session, task_id):
    """Polls tasks/get until the task ends; the statuses seen, in order, without repeats."""
    seen = []
    for _ in range(WAIT_STEPS):
        t = await session.experimental.get_task(task_id)
        if not seen or seen[-1] != t.status:
            seen.append(t.status)
        if t.status in ("completed", "failed", "cancelled"):
            return seen, t
        await asyncio.sleep(STEP)
    return seen, t


async def start(session, args, ttl=60000, meta=None):
    created = await session.experimental.call_tool_as_task(TOOL, args, ttl=ttl, meta=meta)
    return created.task


async def common(session, client, sim, init, out):
    out["protocol"] = init.protocolVersion
    out["capability"] = init.capabilities.tasks.model_dump(mode="json", exclude_none=True) if init.capabilities.tasks else None
    tools = await session.list_tools()
    out["task_support"] = {t.name: (t.execution.taskSupport if t.execution else None) for t in tools.tools}

    # A slow pull: the plain call, then the same as a task on a simulator in the same state.
    await sim.reset(pace=150)
    plain = await session.call_tool(TOOL, pull())
    await sim.reset(pace=150)
    started = time.monotonic()
    task = await start(session, pull(), meta={"progressToken": "pull-1"})
    out["created_ms"] = round((time.monotonic() - started) * 1000)
    out["created"] = {"status": task.status, "ttl": task.ttl, "pollInterval": task.pollInterval}
    first = await session.experimental.get_task(task.taskId)
    out["first_status"] = first.status
    seen, last = await settle(session, task.taskId)
    out["pull_statuses"] = seen
    out["pull_status_message"] = last.statusMessage
    result = await session.experimental.get_task_result(task.taskId, types.CallToolResult)
    got = dump(result)
    meta = got.pop("_meta", None) or {}
    out["result_related_task"] = meta.pop(RELATED, None) == {"taskId": task.taskId}
    if meta:
        got["_meta"] = meta
    out["result_equals_plain"] = same(got, dump(plain))
    out["result_is_error"] = bool(result.isError)
    mine = [p for p in client.progress if p.get("progressToken") == "pull-1"]
    out["progress"] = len(mine)
    out["progress_related_task"] = bool(mine) and all(
        (p.get("_meta") or {}).get(RELATED) == {"taskId": task.taskId} for p in mine
    )
    listed = await session.experimental.list_tasks()
    out["listed"] = task.taskId in [t.taskId for t in listed.tasks]
    pull_id = task.taskId

    # Cancel mid-pull: the stream to Arcane is closed, the task ends cancelled.
    await sim.reset(pace=400)
    task = await start(session, pull())
    out["pulling"] = await sim.until_pulling()
    cancelled = await session.experimental.cancel_task(task.taskId)
    out["cancel_answer"] = cancelled.status
    out["cancel_aborted"] = await sim.pull_aborted()
    seen, last = await settle(session, task.taskId)
    out["cancel_final"] = last.status
    out["cancel_message"] = last.statusMessage
    try:
        await session.experimental.cancel_task(task.taskId)
        out["cancel_again"] = None
    except McpError as e:
        out["cancel_again"] = error_of(e)

    # A stream that fails: the plain call's text, then the task's.
    fault = {"path": "/images/pull$", "kind": "stream_error", "body": {"error": "failed to initiate image pull for nope: denied"}}
    await sim.reset()
    await sim.fault(fault)
    plain = await session.call_tool(TOOL, pull("nope"))
    await sim.reset()
    await sim.fault(fault)
    task = await start(session, pull("nope"))
    seen, last = await settle(session, task.taskId)
    out["failed_status"] = last.status
    result = await session.experimental.get_task_result(task.taskId, types.CallToolResult)
    out["failed_plain_text"] = text_of(plain)
    out["failed_same_text"] = bool(plain.isError) and bool(result.isError) and same(text_of(result), text_of(plain))
    out["failed_message_is_text"] = same(last.statusMessage, text_of(plain))

    # The TTL stops a pull still running: failed, its stream closed.
    await sim.reset(pace=1500)
    task = await start(session, pull(), ttl=1000)
    out["ttl_given"] = task.ttl
    seen, last = await settle(session, task.taskId)
    out["ttl_status"] = last.status
    out["ttl_message"] = last.statusMessage
    out["ttl_aborted"] = await sim.pull_aborted()
    try:
        await session.experimental.get_task_result(task.taskId, types.CallToolResult)
        out["ttl_result"] = None
    except McpError as e:
        out["ttl_result"] = error_of(e)
    out["ttl_id"] = task.taskId

    # --max-tasks 1: a second task while one runs is refused, nothing sent.
    await sim.reset(pace=400)
    task = await start(session, pull())
    await sim.until_pulling()
    before = len(await sim.writes())
    try:
        await start(session, pull("nginx:1.27-alpine"))
        out["limit"] = None
    except McpError as e:
        out["limit"] = error_of(e)
    out["limit_sent"] = len(await sim.writes()) - before
    await session.experimental.cancel_task(task.taskId)
    await settle(session, task.taskId)

    # An instant action as a task completes at once with the plain result; the search takes none.
    await sim.reset()
    plain = await session.call_tool(TOOL, {"action": "container.list"})
    task = await start(session, {"action": "container.list"})
    seen, last = await settle(session, task.taskId)
    result = await session.experimental.get_task_result(task.taskId, types.CallToolResult)
    got = dump(result)
    got.pop("_meta", None)
    out["instant_status"] = last.status
    out["instant_equals_plain"] = same(got, dump(plain))
    try:
        await session.experimental.call_tool_as_task("arcane_find_action", {"query": "pull image"})
        out["find_task"] = None
    except McpError as e:
        out["find_task"] = error_of(e)

    # A destructive task asks the person before anything is sent.
    await sim.reset()
    asked = client.asked
    task = await start(session, PRUNE)
    out["prune_asked"] = client.asked - asked
    seen, last = await settle(session, task.taskId)
    out["prune_status"] = last.status
    out["prune_sent"] = len(await sim.writes())
    out["prune_id"] = task.taskId
    out["pull_id"] = pull_id


async def declined(session, client, sim, out):
    await sim.reset()
    try:
        await start(session, PRUNE)
        out["declined"] = None
    except McpError as e:
        out["declined"] = error_of(e)
    out["declined_asked"] = client.asked
    out["declined_sent"] = len(await sim.writes())


async def stdio_main(sim, command):
    out = {}
    params = StdioServerParameters(command=command[0], args=command[1:])
    client = Client()
    async with stdio_client(params) as (read, write):
        async with client.session(read, write) as session:
            init = await session.initialize()
            await common(session, client, sim, init, out)
    client = Client(answer="decline")
    async with stdio_client(params) as (read, write):
        async with client.session(read, write) as session:
            await session.initialize()
            await declined(session, client, sim, out)
    return out


async def http_main(sim, url, token, other):
    out = {}

    def connect(t):
        return streamablehttp_client(url, headers={"Authorization": f"Bearer {t}"})

    client = Client()
    async with connect(token) as (read, write, _):
        async with client.session(read, write) as session:
            init = await session.initialize()
            await common(session, client, sim, init, out)
    client = Client(answer="decline")
    async with connect(token) as (read, write, _):
        async with client.session(read, write) as session:
            await session.initialize()
            await declined(session, client, sim, out)

    # A task outlives its session; another token cannot see it; a new session reads it.
    await sim.reset(pace=150)
    async with connect(token) as (read, write, _):
        async with Client().session(read, write) as session:
            await session.initialize()
            task = await start(session, pull())
    out["closed_mid_task"] = True
    async with connect(other) as (read, write, _):
        async with Client().session(read, write) as session:
            await session.initialize()
            foreign = {}
            for name, call in [
                ("get", lambda: session.experimental.get_task(task.taskId)),
                ("result", lambda: session.experimental.get_task_result(task.taskId, types.CallToolResult)),
                ("cancel", lambda: session.experimental.cancel_task(task.taskId)),
            ]:
                try:
                    await call()
                    foreign[name] = None
                except McpError as e:
                    foreign[name] = error_of(e)
            listed = await session.experimental.list_tasks()
            foreign["listed"] = task.taskId in [t.taskId for t in listed.tasks]
            out["foreign"] = foreign
    async with connect(token) as (read, write, _):
        async with Client().session(read, write) as session:
            await session.initialize()
            result = await session.experimental.get_task_result(task.taskId, types.CallToolResult)
            out["new_session_result"] = {"is_error": bool(result.isError), "text": text_of(result)}
            seen, last = await settle(session, task.taskId)
            out["new_session_status"] = last.status
    return out


async def main():
    mode, sim = sys.argv[1], Sim(sys.argv[2])
    if mode == "stdio":
        rest = sys.argv[3:]
        out = await stdio_main(sim, rest[rest.index("--") + 1 :])
    else:
        out = await http_main(sim, *sys.argv[3:6])
    print(json.dumps(out))


asyncio.run(main())

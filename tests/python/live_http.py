"""Two callers of `arcane-mcp --transport http` with the official MCP Python SDK's Streamable
HTTP client: live resources over HTTP.

Usage: python3 live_http.py URL TOKEN_A TOKEN_B SIM_URL
Caller A subscribes to web-1, the dashboard and the environments, caller B to api-1 and the
dashboard, each in its own session. The simulator cuts the first client stream (a fault), so
the server must reconnect. Then web-1 and api-1 are stopped through the simulator's own API;
each caller records what it is told. B's session ends, A unsubscribes: the one client stream
the server held for both closes. Prints one JSON object: what the simulator saw of the client
streams at each step, and what each caller heard. Run by tests/e2e_sdk.rs.
"""

import asyncio
import json
import sys

import httpx
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

# Generous guards against a hang, not timing assertions.
WAIT_STEPS = 600
STEP = 0.1
SIM_KEY = {"X-API-Key": "arcane-sim-key"}
WEB, API = "arcane://container/web-1", "arcane://container/api-1"
DASHBOARD, ENVIRONMENTS = "arcane://dashboard", "arcane://environments"


async def main():
    url, token_a, token_b, sim = sys.argv[1:5]
    heard = {"a": [], "b": []}
    out = {}
    http = httpx.AsyncClient()

    def recorder(who):
        async def on_message(message):
            if isinstance(message, types.ServerNotification) and isinstance(
                message.root, types.ResourceUpdatedNotification
            ):
                heard[who].append(str(message.root.params.uri))

        return on_message

    async def streams():
        """The client streams the simulator saw: [open, closed]."""
        got = [s for s in (await http.get(f"{sim}/__sim/streams")).json() if s["path"] == "/api/stream"]
        closed = sum(1 for s in got if s.get("aborted") or s.get("completed"))
        return [len(got) - closed, closed]

    async def until_streams(want):
        for _ in range(WAIT_STEPS):
            if await streams() == want:
                return True
            await asyncio.sleep(STEP)
        return False

    async def until(who, uri):
        for _ in range(WAIT_STEPS):
            if uri in heard[who]:
                return True
            await asyncio.sleep(STEP)
        return False

    async def stop(name):
        r = await http.post(f"{sim}/api/environments/0/containers/{name}/stop", headers=SIM_KEY)
        r.raise_for_status()

    # The first client stream is cut after its first snapshots.
    await http.post(
        f"{sim}/__sim/faults",
        json={"method": "GET", "path": "/api/stream$", "kind": "truncated_stream"},
    )
    auth = lambda t: {"Authorization": f"Bearer {t}"}
    async with streamablehttp_client(url, headers=auth(token_a)) as (ra, wa, _):
        async with ClientSession(ra, wa, message_handler=recorder("a")) as a:
            init = await a.initialize()
            out["subscribe"] = bool(init.capabilities.resources and init.capabilities.resources.subscribe)
            async with streamablehttp_client(url, headers=auth(token_b)) as (rb, wb, _):
                async with ClientSession(rb, wb, message_handler=recorder("b")) as b:
                    await b.initialize()
                    for uri in (WEB, DASHBOARD, ENVIRONMENTS):
                        await a.subscribe_resource(uri)
                    for uri in (API, DASHBOARD):
                        await b.subscribe_resource(uri)
                    # One stream for both callers: cut once, reconnected once.
                    out["reconnected"] = await until_streams([1, 1])
                    await stop("web-1")
                    out["a_heard_web"] = await until("a", WEB)
                    out["a_heard_dashboard"] = await until("a", DASHBOARD)
                    out["b_heard_dashboard"] = await until("b", DASHBOARD)
                    await stop("api-1")
                    out["b_heard_api"] = await until("b", API)
                    out["streams_while_subscribed"] = await streams()
            # B's session has ended (the SDK deletes it): its subscriptions with it. A's keep
            # the stream open until A unsubscribes.
            out["streams_after_b_left"] = await streams()
            await a.unsubscribe_resource(DASHBOARD)
            await a.unsubscribe_resource(ENVIRONMENTS)
            out["closed_after_the_last"] = await until_streams([0, 2])
    requests = (await http.get(f"{sim}/__sim/requests")).json()
    out["stream_requests"] = sum(1 for r in requests if r["path"] == "/api/stream")
    out["a"] = sorted(set(heard["a"]))
    out["b"] = sorted(set(heard["b"]))
    await http.aclose()
    print(json.dumps(out))


asyncio.run(main())

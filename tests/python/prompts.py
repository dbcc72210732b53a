"""Drives `arcane-mcp demo` with the official MCP Python SDK over stdio: its prompts.

Usage: python3 prompts.py BINARY DIR
For each surface and client profile (and the read-only preset): prompts/list, completion of each
prompt argument from the simulator's names, prompts/get of each prompt with completed
arguments, and which actions each text names, checked against what that server serves
(tools/list and arcane://tools). Then hot reload: an overlay written in DIR while the server
runs adds a prompt (the client is told the list changed), and a broken prompt entry keeps the
last good catalog. Prints one JSON object; tests/e2e_sdk.rs asserts on it.
"""

import asyncio
import json
import os
import re
import sys
import tempfile

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

RUNS = {
    "dynamic": ["--tool-surface", "dynamic"],
    "meta": ["--tool-surface", "meta"],
    "individual": ["--tool-surface", "individual"],
    "individual-flat": ["--tool-surface", "individual", "--client-profile", "flat"],
    "dynamic-read-only": ["--tool-surface", "dynamic", "--read-only"],
}


def text_of(result):
    return "\n".join(m.content.text for m in result.messages if getattr(m.content, "type", "") == "text")


def named_actions(surface, text):
    """What a prompt's text names, as (tool, action) pairs in the surface's spelling."""
    if surface.startswith("dynamic"):
        return [("arcane_execute_action", m) for m in re.findall(r"`([a-z][a-z0-9_]*\.[a-z0-9_]+)`", text)]
    if surface == "meta":
        return re.findall(r"`(arcane_[a-z0-9_]+)` \(action `([a-z0-9_]+)`\)", text)
    return [(m, None) for m in re.findall(r"`(arcane_[a-z0-9_]+)`", text)]


def served_spellings(surface, index, tools):
    """Every served action in the surface's spelling."""
    out = set()
    for a in index["actions"]:
        if surface.startswith("dynamic"):
            out.add(("arcane_execute_action", a["id"]))
        elif surface == "meta":
            out.add((a["tool"], a["id"].split(".", 1)[1]))
        else:
            out.add((a["tool"], None))
    # A tool the text names must also be one tools/list gives.
    return {s for s in out if s[0] in tools}


async def surface_run(binary, cwd, name, args):
    params = StdioServerParameters(
        command=binary,
        args=["demo", *args],
        env={"PATH": os.environ.get("PATH", ""), "ARCANE_MCP_LOG": "warn"},
        cwd=cwd,
    )
    out = {"prompts": {}, "unserved": [], "named": 0}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            caps = init.capabilities
            out["list_changed"] = bool(caps.prompts and caps.prompts.listChanged)
            out["completions"] = caps.completions is not None
            tools = {t.name for t in (await session.list_tools()).tools}
            index = json.loads((await session.read_resource("arcane://tools")).contents[0].text)
            served = served_spellings(name, index, tools)
            listed = (await session.list_prompts()).prompts
            for p in listed:
                entry = {"title": p.title, "arguments": {}}
                given = {}
                for a in p.arguments or []:
                    done = await session.complete(
                        types.PromptReference(type="ref/prompt", name=p.name),
                        {"name": a.name, "value": ""},
                    )
                    values = done.completion.values
                    entry["arguments"][a.name] = values
                    if values:
                        given[a.name] = values[0]
                    elif a.required:
                        given[a.name] = "example"
                result = await session.get_prompt(p.name, given)
                text = text_of(result)
                entry["roles"] = [m.role for m in result.messages]
                entry["text"] = text
                names = named_actions(name, text)
                entry["named"] = len(names)
                out["named"] += len(names)
                out["unserved"] += [f"{p.name}: {n}" for n in names if n not in served]
                out["prompts"][p.name] = entry
            # A missing required argument is refused with a message naming it.
            try:
                await session.get_prompt("troubleshoot-container", {})
                out["missing_error"] = None
            except Exception as e:  # McpError
                out["missing_error"] = str(e)
    return out


async def reload_run(binary, cwd):
    overrides = tempfile.mkdtemp(prefix="prompts-overlay-")
    errlog_path = os.path.join(overrides, "..", os.path.basename(overrides) + ".log")
    params = StdioServerParameters(
        command=binary,
        args=["demo", "--overrides", overrides],
        env={"PATH": os.environ.get("PATH", ""), "ARCANE_MCP_LOG": "info"},
        cwd=cwd,
    )
    changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.PromptListChangedNotification
        ):
            changed.set()

    out = {}
    with open(errlog_path, "w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                await session.initialize()
                before = {p.name for p in (await session.list_prompts()).prompts}
                with open(os.path.join(overrides, "ours.yaml"), "w") as f:
                    f.write(
                        "prompts:\n"
                        "  restart-web:\n"
                        "    description: Restart the web container and check it\n"
                        "    arguments:\n"
                        "      - {name: container, description: Which one, required: true, complete: containers}\n"
                        "    template: Restart {{container}} with {{container.restart}}.\n"
                    )
                # A hang guard, not a timing assertion.
                await asyncio.wait_for(changed.wait(), timeout=60)
                after = {p.name for p in (await session.list_prompts()).prompts}
                out["added"] = sorted(after - before)
                got = await session.get_prompt("restart-web", {"container": "web-1"})
                out["text"] = text_of(got)
                # A broken entry: the reload fails, and the last good catalog keeps serving.
                with open(os.path.join(overrides, "ours.yaml"), "w") as f:
                    f.write(
                        "prompts:\n"
                        "  restart-web:\n"
                        "    description: Restart the web container and check it\n"
                        "    template: Restart {{nobody}} with {{container.restart}}.\n"
                    )
                for _ in range(600):
                    errlog.flush()
                    errlog.seek(0)
                    log = errlog.read()
                    if "reload failed" in log:
                        break
                    await asyncio.sleep(0.1)
                out["failure_logged"] = [l for l in log.splitlines() if "reload failed" in l][:1]
                kept = {p.name for p in (await session.list_prompts()).prompts}
                out["kept"] = "restart-web" in kept
    return out


async def main():
    binary, cwd = sys.argv[1], sys.argv[2]
    report = {}
    for name, args in RUNS.items():
        report[name] = await asyncio.wait_for(surface_run(binary, cwd, name, args), timeout=120)
    report["reload"] = await asyncio.wait_for(reload_run(binary, cwd), timeout=120)
    print(json.dumps(report))


asyncio.run(main())

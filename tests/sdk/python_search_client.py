"""The Python SDK v2 client on a search profile of mcpx: lists the two tools it shows, searches,
calls what it found through mcpx__call_tool with progress, and cancels such a call.

Usage: python_search_client.py REVISION http URL
       python_search_client.py REVISION stdio MCPX_BIN CONFIG PROFILE
Prints one JSON object. (The cancelled call's arrival upstream shows in mcpx's log.)
"""

import asyncio
import json
import sys

import anyio
import mcp.client.session as session_module
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def main(revision: str, transport: str, target: list[str]) -> None:
    modern = revision == "2026-07-28"
    if not modern:
        session_module.LATEST_HANDSHAKE_VERSION = revision
    if transport == "http":
        server = target[0]
    else:
        server = StdioServerParameters(
            command=target[0], args=["--config", target[1], "serve", "--profile", target[2]]
        )
    report = {"revision": revision, "transport": transport}
    async with Client(server, mode="2026-07-28" if modern else "legacy") as client:
        report["negotiated"] = client.session.protocol_version
        tools = await client.list_tools()
        report["listed"] = sorted(t.name for t in tools.tools)
        found = await client.call_tool("mcpx__search_tools", {"query": "report progress in steps"})
        # The text content carries the matches in every revision (structured content came later).
        matches = json.loads(found.content[0].text)["tools"]
        report["found"] = [t["name"] for t in matches]
        report["found_schema"] = matches[0].get("inputSchema")
        echo = await client.call_tool(
            "mcpx__call_tool", {"name": "fixture__say", "arguments": {"text": "searched"}}
        )
        report["called"] = [c.text for c in echo.content]
        progress = []

        async def on_progress(value, total, message) -> None:
            progress.append(value)

        await client.call_tool(
            "mcpx__call_tool",
            {"name": "fixture__progress", "arguments": {"steps": 2}},
            progress_callback=on_progress,
        )
        report["progress"] = len(progress)
        reached = anyio.Event()

        async def on_sleeping(value, total, message) -> None:
            reached.set()

        async def sleep_until_cancelled() -> None:
            await client.call_tool(
                "mcpx__call_tool", {"name": "fixture__sleep", "arguments": {}}, progress_callback=on_sleeping
            )

        async with anyio.create_task_group() as sleeping:
            sleeping.start_soon(sleep_until_cancelled)
            with anyio.move_on_after(10):
                await reached.wait()
            sleeping.cancel_scope.cancel()
        report["cancelled"] = reached.is_set()
    print(json.dumps(report))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))

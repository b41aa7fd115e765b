"""The Python SDK v2 client through mcpx, at one revision over one transport: lists tools, calls
one, receives progress, cancels a call, and hears tools/list_changed.

Usage: python_matrix_client.py REVISION http URL
       python_matrix_client.py REVISION stdio MCPX_BIN CONFIG
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
        # The SDK offers its newest handshake revision; make it offer the one under test.
        session_module.LATEST_HANDSHAKE_VERSION = revision
    server = target[0] if transport == "http" else StdioServerParameters(command=target[0], args=["--config", target[1], "serve"])
    list_changed = asyncio.Event()

    async def on_message(message) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            list_changed.set()

    report = {"revision": revision, "transport": transport}
    async with Client(server, mode="2026-07-28" if modern else "legacy", message_handler=on_message) as client:
        report["negotiated"] = client.session.protocol_version
        tools = await client.list_tools()
        report["listed"] = any(t.name == "fixture__echo" for t in tools.tools)
        echo = await client.call_tool("fixture__echo", {"text": "matrix"})
        report["called"] = [c.text for c in echo.content] == ["matrix"]
        progress = []

        async def on_progress(value, total, message) -> None:
            progress.append(value)

        await client.call_tool("fixture__progress", {"steps": 2}, progress_callback=on_progress)
        report["progress"] = len(progress)
        # The upstream reports progress once the call has reached it: cancel only then, so the
        # cancellation has a call upstream to reach, however loaded the machine.
        reached = anyio.Event()

        async def on_sleeping(value, total, message) -> None:
            reached.set()

        async def sleep_until_cancelled() -> None:
            await client.call_tool("fixture__sleep", {}, progress_callback=on_sleeping)

        async with anyio.create_task_group() as sleeping:
            sleeping.start_soon(sleep_until_cancelled)
            with anyio.move_on_after(10):
                await reached.wait()
            sleeping.cancel_scope.cancel()
        report["cancelled"] = True
        if modern:
            async with client.listen(tools_list_changed=True) as subscription:
                await client.call_tool("fixture__add_tool", {})
                with anyio.fail_after(10):
                    async for _event in subscription:
                        list_changed.set()
                        break
        else:
            await asyncio.sleep(0.3)
            await client.call_tool("fixture__add_tool", {})
            await asyncio.wait_for(list_changed.wait(), timeout=10)
        report["list_changed"] = list_changed.is_set()
    print(json.dumps(report))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))

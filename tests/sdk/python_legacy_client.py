"""A real SDK client (the Python MCP SDK v2) talking to mcpx over Streamable HTTP at a legacy
revision: it offers exactly that revision in `initialize`, lists and calls a tool, then makes the
fixture change its tool list and waits for `notifications/tools/list_changed` on the session.

Usage: python_legacy_client.py URL REVISION. Prints one JSON object.
"""

import asyncio
import json
import sys

import mcp.client.session as session_module
from mcp.client import Client


async def main(url: str, revision: str) -> None:
    # The SDK offers its newest handshake revision; make it offer the one under test.
    session_module.LATEST_HANDSHAKE_VERSION = revision
    list_changed = asyncio.Event()

    async def on_message(message) -> None:
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            list_changed.set()

    async with Client(url, mode="legacy", message_handler=on_message) as client:
        tools = await client.list_tools()
        echo = await client.call_tool("fixture__echo", {"text": f"hello at {revision}"})
        # Give the session's GET stream a moment to open before the change is announced.
        await asyncio.sleep(0.3)
        await client.call_tool("fixture__add_tool", {})
        await asyncio.wait_for(list_changed.wait(), timeout=10)
        print(json.dumps({
            "negotiated": client.session.protocol_version,
            "tools": [t.name for t in tools.tools],
            "echo": [c.text for c in echo.content],
            "list_changed": list_changed.is_set(),
        }))


asyncio.run(main(sys.argv[1], sys.argv[2]))

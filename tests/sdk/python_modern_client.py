"""A real SDK client (the Python MCP SDK v2) talking to mcpx over Streamable HTTP at 2026-07-28.

Usage: python_modern_client.py URL. Prints one JSON object: the tools listed and two call results,
one of them through a tool whose `region` parameter carries an x-mcp-header annotation.
"""

import asyncio
import json
import sys

from mcp.client import Client


async def main(url: str) -> None:
    async with Client(url, mode="2026-07-28") as client:
        tools = await client.list_tools()
        echo = await client.call_tool("fixture__echo", {"text": "via the SDK", "region": "eu-west 1"})
        unicode = await client.call_tool("fixture__echo", {"text": "héllo", "region": " padded "})
        print(json.dumps({
            "tools": [t.name for t in tools.tools],
            "echo": [c.text for c in echo.content],
            "unicode": [c.text for c in unicode.content],
            "is_error": bool(echo.is_error),
        }))


asyncio.run(main(sys.argv[1]))

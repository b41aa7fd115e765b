"""The Python SDK v2 client in the legacy era on `mcpx serve`: calls a tool whose upstream logs
while it runs, and reports what its logging callback received.

Usage: python_logging_client.py MCPX_BIN CONFIG TOOL
Prints one JSON object: the tool's text and the log messages (level, logger, data).
"""

import asyncio
import json
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def main(mcpx: str, config: str, tool: str) -> None:
    logged: list[dict] = []

    async def on_log(params):
        logged.append({"level": params.level, "logger": params.logger, "data": params.data})

    server = StdioServerParameters(command=mcpx, args=["--config", config, "serve"])
    async with Client(server, mode="legacy", logging_callback=on_log) as client:
        result = await client.call_tool(tool, {})
        text = "".join(c.text for c in result.content if c.type == "text")
        revision = client.session.protocol_version
    print(json.dumps({"text": text, "revision": revision, "logged": logged}))


asyncio.run(main(*sys.argv[1:4]))

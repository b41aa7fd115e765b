"""The Python SDK v2 client logging in to a remote server through mcpx from the editor: when mcpx
asks it (URL-mode elicitation) to open the sign-in page, it opens it as a browser would
(following the redirects back to mcpx) and accepts.

Usage: python_login_client.py ERA MCPX_BIN CONFIG STEP...
ERA is legacy or 2026-07-28; a STEP is TOOL (called without arguments), TOOL=JSON (called with
those arguments) or sleep=SECONDS. Prints one JSON object: what was asked, and each call's text
(or its error) in order.
"""

import asyncio
import json
import os
import sys
import urllib.request

from mcp import types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


async def main(era: str, mcpx: str, config: str, steps: list[str]) -> None:
    asked: list[dict] = []

    async def on_elicit(context, params):
        asked.append({"mode": params.mode, "url": getattr(params, "url", None)})
        if params.mode != "url":
            return types.ElicitResult(action="decline")
        # The person's browser: the sign-in page redirects back to mcpx's loopback listener.
        await asyncio.to_thread(lambda: urllib.request.urlopen(params.url, timeout=30).read())
        return types.ElicitResult(action="accept")

    parameters = StdioServerParameters(command=mcpx, args=["--config", config, "serve"], env=dict(os.environ))
    calls: list[str] = []
    async with Client(parameters, mode=era, elicitation_callback=on_elicit) as client:
        for step in steps:
            name, _, argument = step.partition("=")
            if name == "sleep":
                await asyncio.sleep(float(argument))
                continue
            try:
                result = await client.call_tool(name, json.loads(argument or "{}"))
                calls.append("".join(c.text for c in result.content if c.type == "text"))
            except MCPError as error:
                calls.append(f"error: {error}")
    print(json.dumps({"era": era, "asked": asked, "calls": calls}))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))

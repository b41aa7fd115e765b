"""FastMCP 4's client, rendering MCP Apps, in front of `mcpx serve`.

`python fastmcp_apps_client.py MCPX CONFIG [--no-apps]`: lists the tools, reads each tool's UI
resource and calls a tool by its server's own name, printing one JSON object: the era spoken, the listed tool names, each UI tool's resource URI and the text of its HTML, and the
bare call's text. `--no-apps` declares no extension.
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.client import advertise

UI = "io.modelcontextprotocol/ui"


async def main() -> None:
    mcpx, config = sys.argv[1], sys.argv[2]
    apps = "--no-apps" not in sys.argv
    extensions = [advertise(UI, {"mimeTypes": ["text/html;profile=mcp-app"]})] if apps else []
    transport = StdioTransport(command=mcpx, args=["--config", config, "serve"])
    async with Client(transport, extensions=extensions) as client:
        tools = await client.list_tools()
        report = {
            # No `initialize` was needed: the 2026-07-28 era.
            "era": "legacy" if client.initialize_result else "2026-07-28",
            "tools": sorted(t.name for t in tools),
            "ui": {},
        }
        for tool in tools:
            ui = ((tool.meta or {}).get("ui") or {}).get("resourceUri")
            if ui and tool.name.endswith("__show"):
                contents = await client.read_resource(ui)
                report["ui"][tool.name] = {"uri": ui, "html": contents[0].text}
        if apps:
            called = await client.call_tool("only_b", {})
            report["bare"] = called.content[0].text
        print(json.dumps(report))


asyncio.run(main())

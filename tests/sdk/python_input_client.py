"""The Python SDK v2 client answering an upstream's questions through mcpx: elicitation,
sampling and roots, in one era over one transport. In the legacy era the SDK answers mcpx's
requests; in 2026-07-28 it answers InputRequiredResults and retries, as the SDK does itself.

Usage: python_input_client.py ERA http URL
       python_input_client.py ERA stdio MCPX_BIN CONFIG
ERA is legacy or 2026-07-28. Prints one JSON object: each tool's text and what was asked.
"""

import asyncio
import json
import sys

from mcp import types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def main(era: str, transport: str, target: list[str]) -> None:
    server = target[0] if transport == "http" else StdioServerParameters(command=target[0], args=["--config", target[1], "serve"])
    asked: list[str] = []

    async def on_elicit(context, params):
        asked.append("elicitation/create")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(context, params):
        asked.append("sampling/createMessage")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="Paris"), model="test-model")

    async def on_roots(context):
        asked.append("roots/list")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    report = {"era": era, "transport": transport}
    async with Client(
        server,
        mode=era,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
    ) as client:
        report["negotiated"] = client.session.protocol_version
        for tool in ["fixture__ask", "fixture__sample", "fixture__roots"]:
            result = await client.call_tool(tool, {})
            report[tool] = "".join(c.text for c in result.content if c.type == "text")
    report["asked"] = asked
    print(json.dumps(report))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))

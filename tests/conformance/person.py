"""The person in the suite's client scenarios: a Python SDK v2 client on `mcpx serve`, which
lists the tools mcpx serves from the scenario's server, calls each with arguments made from its
input schema, and answers what the server asks through mcpx (elicitation with the schema's
defaults, or, for a URL-mode one, by opening the page as a browser would; sampling, roots). Everything the scenario checks is done by mcpx; this only uses it.

Usage: person.py MCPX_BIN CONFIG   (prints each call's outcome)
"""

import asyncio
import json
import os
import sys
import urllib.request

from mcp import types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

SAMPLES = {"string": "héllo wörld", "number": 2, "integer": 2, "boolean": True, "array": [], "object": {}}


def value_for(schema: dict):
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return SAMPLES.get(kind, "hello")


def arguments_for(schema: dict, only_required: bool = False) -> dict:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    return {name: value_for(prop or {}) for name, prop in properties.items() if not only_required or name in required}


async def main(mcpx: str, config: str) -> None:
    server = StdioServerParameters(command=mcpx, args=["--config", config, "serve"])

    async def on_elicit(context, params):
        if getattr(params, "mode", None) == "url":
            # mcpx asks the person to sign in: the page redirects back to mcpx by itself.
            await asyncio.to_thread(lambda: urllib.request.urlopen(params.url, timeout=30).read())
            return types.ElicitResult(action="accept")
        schema = getattr(params, "requested_schema", None) or {}
        properties = schema.get("properties") or {}
        content = {name: prop["default"] for name, prop in properties.items() if "default" in prop}
        return types.ElicitResult(action="accept", content=content)

    async def on_sample(context, params):
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="ok"), model="person")

    async def on_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    # Where the scenario names the calls to make (its context's `toolCalls`), the person makes
    # those, with those arguments; a tool that echoes a schema gets the schema mcpx listed for
    # the tool it names. Otherwise every tool is called with arguments made from its schema.
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")

    async def call(name: str, arguments: dict) -> None:
        try:
            result = await client.call_tool(name, arguments)
            text = "".join(getattr(c, "text", "") for c in result.content)
            print(f"{name}: {'error ' if result.is_error else ''}{text[:200]}")
        except Exception as e:  # a refused call is the scenario's business, not the person's
            print(f"{name}: failed: {e}")

    async with Client(server, elicitation_callback=on_elicit, sampling_callback=on_sample, list_roots_callback=on_roots) as client:
        tools = await client.list_tools()
        exposed = {tool.name.split("__", 1)[-1]: tool for tool in tools.tools if not tool.name.startswith("mcpx__")}
        if context.get("toolCalls"):
            for planned in context["toolCalls"]:
                await call(exposed[planned["name"]].name, planned.get("arguments") or {})
            return
        echoed = set()
        if "json_schema_echo" in exposed and "json_schema_2020_12_tool" in exposed:
            focal = exposed["json_schema_2020_12_tool"].input_schema
            await call(exposed["json_schema_echo"].name, {"schema": focal})
            echoed.add(exposed["json_schema_echo"].name)
        for tool in tools.tools:
            if tool.name.startswith("mcpx__") or tool.name in echoed:
                continue
            schema = tool.input_schema or {}
            # Every argument filled in, then (where some are optional) the required ones alone.
            calls = [arguments_for(schema)]
            if arguments_for(schema, only_required=True) != calls[0]:
                calls.append(arguments_for(schema, only_required=True))
            for arguments in calls:
                await call(tool.name, arguments)


asyncio.run(main(sys.argv[1], sys.argv[2]))

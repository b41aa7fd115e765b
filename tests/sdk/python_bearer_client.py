"""The Python SDK v2 client through mcpx's HTTP door, bearing a token: calls one tool and prints
its structured result as JSON, for the team-gateway tests.

Usage: python_bearer_client.py URL TOKEN TOOL ARGUMENTS_JSON
"""

import asyncio
import json
import sys

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, token: str, tool: str, arguments: dict) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool(tool, arguments)
            print(json.dumps({"structured": result.structured_content, "isError": result.is_error}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))

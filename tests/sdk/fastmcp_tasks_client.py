"""FastMCP 4's own client, with `fastmcp-tasks`, driving tasks through mcpx's Streamable HTTP door
at 2026-07-28, as people run it: a task created and its `result()` awaited, a plain call to a task
tool (which the client turns into a task and polls to the end on its own), and a task cancelled.
Its `tasks/get`, `tasks/update` and `tasks/cancel` carry no `Mcp-Name`.

Usage: fastmcp_tasks_client.py URL. Prints one JSON object.
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp_tasks.client import call_tool_task


def text_of(result) -> str:
    return " ".join(c.text for c in result.content if getattr(c, "text", None))


async def main(url: str) -> None:
    async with Client(url, mode="2026-07-28") as client:
        created = await call_tool_task(client, "slow_compute", {"seconds": 0.2, "label": "first"})
        finished = await created.result()
        plain = await client.call_tool("slow_compute", {"seconds": 0.1, "label": "plain"})
        long = await call_tool_task(client, "slow_compute", {"seconds": 120, "label": "long"})
        await long.cancel()
        ended = await long.wait(timeout=60)
        print(json.dumps({
            "task_id": created.task_id,
            "result": text_of(finished),
            "plain": text_of(plain),
            "cancelled": ended.status,
        }))


asyncio.run(main(sys.argv[1]))

"""A FastMCP 4 server whose long tools run as tasks of the 2026-07-28 Tasks extension
(`fastmcp-tasks`, SEP-2663), with the tools the conformance suite's `tasks-*` scenarios name:
mcpx's end-to-end tests put it behind the gateway over stdio. With `--widget`, it also serves
`ui://widget/view.html` (the URI every app server of the tests shares) and a task whose result
links it."""

import asyncio
import sys

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

mcp = FastMCP("fastmcp-tasks")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool
def greet(name: str = "world") -> str:
    """Answers at once: never a task."""
    return f"Hello, {name}!"


@mcp.tool(task=True)
async def slow_compute(seconds: float = 1.0, label: str = "job") -> str:
    """Works for `seconds`, then says it is done."""
    await asyncio.sleep(seconds)
    return f"{label} done after {seconds}s"


@mcp.tool(task=TaskConfig(mode="required"))
async def failing_job() -> str:
    """A task whose tool fails (a result with isError)."""
    raise ToolError("the job failed")


@mcp.tool(task=TaskConfig(mode="required"))
async def protocol_error_job() -> str:
    """A task that ends in a JSON-RPC error."""
    raise MCPError(code=-32603, message="the job broke")


@mcp.tool(task=True)
async def confirm_delete(filename: str, ctx: Context):
    """Asks the user, inside the task, before it deletes (the guard pattern: the task asks by
    returning its input requests, and runs again with the answers)."""
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is None:
        schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
        ask = ElicitRequest(
            params=ElicitRequestFormParams(message=f"Delete {filename}?", requested_schema=schema)
        )
        return InputRequiredResult(input_requests={"confirm": ask})
    if answer.action == "accept" and (answer.content or {}).get("confirm"):
        return f"deleted {filename}"
    return f"kept {filename}"



def elicit(message: str, field: str, kind: str) -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


@mcp.tool(task=True)
async def multi_input(ctx: Context):
    """Asks two questions at once, inside the task; asks again only what is still unanswered."""
    answers = ctx.input_responses or {}
    asks = {
        "name": elicit("Your name?", "name", "string"),
        "confirm": elicit("Go ahead?", "confirm", "boolean"),
    }
    missing = {key: ask for key, ask in asks.items() if key not in answers}
    if missing:
        return InputRequiredResult(input_requests=missing)
    return f"thanks, {answers['name'].content.get('name')}"


@mcp.tool(task=TaskConfig(mode="required"))
async def test_tool_with_task(ctx: Context):
    """Asks for a user name, then greets them from the task."""
    answer = (ctx.input_responses or {}).get("user_name")
    if answer is None:
        return InputRequiredResult(input_requests={"user_name": elicit("Your name?", "name", "string")})
    return f"Hello, {(answer.content or {}).get('name')}!"


def serve_widget() -> None:
    """The widget, and `link_widget`, a task whose result links it."""
    from fastmcp.apps.config import AppConfig
    from mcp_types import ResourceLink

    uri = "ui://widget/view.html"

    @mcp.resource(uri, app=AppConfig())
    def widget() -> str:
        return "<!doctype html><p>widget of the tasks server</p>"

    @mcp.tool(task=TaskConfig(mode="required"))
    async def link_widget() -> ResourceLink:
        """A task whose result links this server's widget."""
        return ResourceLink(type="resource_link", uri=uri, name="widget")


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--widget" in sys.argv:
        serve_widget()
    mcp.run(transport=arguments[0] if arguments else "stdio", show_banner=False)

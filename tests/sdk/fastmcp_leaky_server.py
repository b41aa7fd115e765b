"""A FastMCP 4 server that hands out credentials and personal data everywhere a model reads,
for the guardrails tests: `python fastmcp_leaky_server.py`. The values are made up but have
the shapes scanners know, and are built here so that no repository scanner takes this file
for a leak. Its tools: `leak` (a dict: structured content and its text), `leak_text` (plain
text), `leak_later` (the same, as a task of the Tasks extension), `deploy` (whose description
holds a token), `big` (`size` characters of text, its head and tail marked), `leak_hidden` (the
token split over two text items, hidden by a zero-width space and a Cyrillic letter, in
base64, as a member's name, in members named as protocol tokens and in `_meta`) and
the resource `leak://broken` (a JSON-RPC error whose message and data hold it); its resource
`leak://config` and its prompt `leaky` hold them too. Speaks stdio.
"""

import base64

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

GITHUB = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
AWS_ID = "AKIA" + "IOSFODNN7" + "EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + "BKcwggSjAgEAAoIBAQC7"
PEM = (
    "-----BEGIN " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END " + "PRIVATE KEY-----"
)
EMAIL = "ada.lovelace" + "@" + "example.org"
LEAK = (
    f"token {GITHUB}\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n"
    f"{PEM}\ncontact {EMAIL}"
)

mcp = FastMCP("leaky")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool
def leak() -> dict:
    """Returns a configuration."""
    return {"config": LEAK, "owner": EMAIL}


@mcp.tool
def leak_text() -> str:
    """Returns a configuration as text."""
    return LEAK


@mcp.tool(task=TaskConfig(mode="optional"))
async def leak_later() -> str:
    """Returns a configuration, as a task."""
    return LEAK


@mcp.tool(description=f"Deploys the site with the token {GITHUB}")
def deploy() -> str:
    return "deployed"


@mcp.tool
def big(size: int = 1_000_000) -> str:
    """Returns `size` characters, its start and end marked."""
    body = "x" * max(size - 10, 0)
    return "HEAD>" + body + "<TAIL"


@mcp.tool
def leak_hidden() -> ToolResult:
    """Returns the token where a scanner's first look misses it."""
    half = len(GITHUB) // 2
    disguised = GITHUB[:2] + "\u200b" + GITHUB[2:].replace("A", "\u0410", 1)
    texts = [
        "split " + GITHUB[:half],
        GITHUB[half:] + " here",
        "hidden " + disguised + " ",
        "encoded " + base64.b64encode(GITHUB.encode()).decode(),
    ]
    return ToolResult(
        content=[TextContent(type="text", text=text) for text in texts],
        structured_content={GITHUB: "a key", "cursor": GITHUB, "taskId": GITHUB, "requestState": GITHUB},
        meta={"com.example/echo": GITHUB},
    )


@mcp.resource("leak://broken")
def broken() -> str:
    """Fails, saying the token."""
    raise MCPError(-32602, f"the token {GITHUB} is wrong", {"token": GITHUB})


@mcp.resource("leak://config")
def config() -> str:
    """The configuration."""
    return LEAK


@mcp.prompt
def leaky() -> str:
    """A prompt with the configuration in it."""
    return f"Use this configuration: {LEAK}"


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)

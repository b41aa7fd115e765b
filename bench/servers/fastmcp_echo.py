"""A FastMCP server with one tool, `echo`, over stdio, as people run FastMCP: its own default
logging (a line on stderr per request). bench/run puts it behind mcpx and behind the Rust
`mcp-proxy`."""

from fastmcp import FastMCP

mcp = FastMCP("echo")


@mcp.tool
def echo(text: str) -> str:
    """Returns the text it was given."""
    return text


if __name__ == "__main__":
    mcp.run(show_banner=False)

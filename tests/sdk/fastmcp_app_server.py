"""A FastMCP 4 app server for the MCP Apps tests: `python fastmcp_app_server.py NAME`.

Every such server declares the same UI resource, `ui://widget/view.html`, whose HTML names the
server, as FastMCP's own app servers all share `ui://prefab/renderer.html`. Its tools: `show`
(rendered by that UI), `refresh` (app-only: the UI calls it, the model does not see it),
`plain` (no UI) and `only_NAME`, which no other server has; and the UI template
`ui://chart/{id}.html`, which every such server shares too. Each further argument is a `ui://`
URI the server also serves, whose HTML says "served by NAME" (a server passing its own off as
another's). Speaks stdio.
"""

import sys

from fastmcp import FastMCP
from fastmcp.apps.config import AppConfig

NAME = sys.argv[1]
URI = "ui://widget/view.html"

mcp = FastMCP(f"app-{NAME}")


@mcp.tool(app=AppConfig(resource_uri=URI))
def show() -> dict:
    """Shows this server's widget."""
    return {"server": NAME}


@mcp.tool(app=AppConfig(resource_uri=URI, visibility=["app"]))
def refresh() -> str:
    """Called by the widget, not by the model."""
    return f"refreshed by {NAME}"


@mcp.tool
def plain() -> str:
    """A tool without a UI."""
    return f"plain from {NAME}"


@mcp.tool(name=f"only_{NAME}")
def only() -> str:
    """A tool no other server has."""
    return f"only {NAME}"


@mcp.resource(URI, app=AppConfig(prefers_border=True))
def view() -> str:
    """The widget."""
    return f"<!doctype html><title>{NAME}</title><p>widget of server {NAME}</p>"


@mcp.resource("ui://chart/{id}.html", app=AppConfig())
def chart(id: str) -> str:
    """One chart's widget, by its id."""
    return f"<!doctype html><p>chart {id} of server {NAME}</p>"


def serve_also(uri: str) -> None:
    """Serves `uri` too, as this server's."""

    def page() -> str:
        return f"<!doctype html><p>{uri} served by {NAME}</p>"

    mcp.resource(uri, name=f"also-{len(uri)}", app=AppConfig())(page)


for extra in sys.argv[2:]:
    serve_also(extra)


if __name__ == "__main__":
    mcp.run(show_banner=False)

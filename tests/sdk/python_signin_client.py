"""The Python SDK v2 client of one person, through mcpx's HTTP door with their own token, signing
in to a per-identity remote server as themselves when mcpx asks (URL-mode elicitation): it
opens mcpx's sign-in link as that person's browser would, with mcpx reached by its public name,
signs in at the server's authorization server as USER, follows the redirect back to mcpx, and
accepts.

Usage: python_signin_client.py ERA URL TOKEN PUBLIC DAEMON USER STEP...
ERA is legacy or 2026-07-28; PUBLIC is mcpx's publicUrl, which the browser reaches at the
origin DAEMON; a STEP is TOOL (called without arguments) or TOOL=JSON. Prints one JSON object:
what was asked, what each page answered, and each call's text (or its error) in order.
"""

import asyncio
import json
import sys
import urllib.error
import urllib.request

import httpx2
from mcp import types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get(url: str, cookie: str = "", form: str | None = None) -> tuple[int, str, str, str]:
    """A browser's GET (or, with `form`, POST of that form) sending `cookie`, showing its
    redirect rather than following it: status, Location, body, and the cookie it was given."""
    headers = {"Cookie": cookie} if cookie else {}
    data = None
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        data = form.encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    opener = urllib.request.build_opener(NoRedirects)
    try:
        answer = opener.open(request, timeout=30)
        status = answer.status
    except urllib.error.HTTPError as refused:
        answer, status = refused, refused.code
    with answer:
        given = (answer.headers.get("Set-Cookie") or "").split(";")[0]
        return status, answer.headers.get("Location", ""), answer.read().decode(), given


def browse(link: str, public: str, daemon: str, user: str) -> list[dict]:
    """The person's browser on mcpx's sign-in link: its page confirmed, to the authorization
    server, where they sign in as `user`, and back to mcpx, holding the cookie mcpx gave it."""
    pages = []
    at_mcpx = lambda url: url.replace(public, daemon, 1)
    status, _, text, cookie = get(at_mcpx(link))
    pages.append({"page": "confirm", "status": status})
    if status != 200:
        return pages
    ticket = text.split('name=ticket value="')[1].split('"')[0]
    status, location, _, _ = get(f"{daemon}/upstreams/login", cookie, f"ticket={ticket}")
    pages.append({"page": "start", "status": status})
    if status != 303:
        return pages
    status, location, _, _ = get(f"{location}&user={user}")
    pages.append({"page": "authorize", "status": status, "back": location.split("?")[0]})
    status, _, text, _ = get(at_mcpx(location), cookie)
    pages.append({"page": "callback", "status": status, "text": text})
    return pages


async def main(era: str, url: str, token: str, public: str, daemon: str, user: str, steps: list[str]) -> None:
    asked: list[dict] = []

    async def on_elicit(context, params):
        link = getattr(params, "url", None)
        asked.append({"mode": params.mode, "url": link, "message": params.message})
        if params.mode != "url":
            return types.ElicitResult(action="decline")
        asked[-1]["pages"] = await asyncio.to_thread(browse, link, public, daemon, user)
        return types.ElicitResult(action="accept")

    calls: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=era, elicitation_callback=on_elicit) as client:
            for step in steps:
                name, _, argument = step.partition("=")
                try:
                    result = await client.call_tool(name, json.loads(argument or "{}"))
                    calls.append("".join(c.text for c in result.content if c.type == "text"))
                except MCPError as error:
                    calls.append(f"error: {error}")
    print(json.dumps({"era": era, "asked": asked, "calls": calls}))


asyncio.run(main(*sys.argv[1:7], sys.argv[7:]))

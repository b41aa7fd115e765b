"""The Python SDK v2's OAuthClientProvider logging in to a door of mcpx whose tokens come from an
identity provider, with nothing but the door's URL: from its first 401 it reads the door's
metadata and the provider's, registers itself, sends the person to authorize (a browser that
takes the code from the redirect) and calls with the token it gets.

Against mcpx's own authorization server the authorization URL is a consent page: the browser then
posts its form back with the owner secret (MCPX_OWNER_SECRET), as the person would.

Usage: python_oauth_client.py URL
Prints one JSON object: the client id it registered, the tools listed, a call's text.
"""

import asyncio
import json
import os
import re
import sys
import urllib.parse

import httpx2
from mcp.client import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata


class Memory:
    """Tokens and the registration, kept for this run only."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client):
        self.client = client


async def consent(http, authorization_url: str, page):
    """The owner's answer on a consent page: its form, this browser's cookie, the secret."""

    def field(name: str) -> str:
        return re.search(f'name="{name}" value="([^"]*)"', page.text).group(1)

    form = {
        "request": field("request"),
        "csrf": field("csrf"),
        "decision": "allow",
        "secret": os.environ["MCPX_OWNER_SECRET"],
    }
    cookie = page.headers["set-cookie"].split(";")[0]
    action = urllib.parse.urljoin(authorization_url, "/oauth/authorize")
    return await http.post(action, data=form, headers={"cookie": cookie})


async def main(url: str) -> None:
    redirected: dict[str, str] = {}

    async def browse(authorization_url: str) -> None:
        # The person's browser, as far as the provider's redirect back to the client.
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            answer = await http.get(authorization_url)
            if answer.status_code == 200:
                answer = await consent(http, authorization_url, answer)
        query = urllib.parse.urlparse(answer.headers["location"]).query
        redirected.update({k: v[0] for k, v in urllib.parse.parse_qs(query).items()})

    async def come_back() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=redirected["code"], state=redirected.get("state"), iss=redirected.get("iss")
        )

    metadata = OAuthClientMetadata(
        client_name="mcpx test (Python SDK)",
        redirect_uris=["http://127.0.0.1:9/callback"],
        grant_types=["authorization_code"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    storage = Memory()
    provider = OAuthClientProvider(url, metadata, storage, browse, come_back)
    async with httpx2.AsyncClient(auth=provider) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            tools = await client.list_tools()
            echoed = await client.call_tool("fixture__echo", {"text": "hi"})
    text = "".join(c.text for c in echoed.content if c.type == "text")
    registered = storage.client.client_id if storage.client else None
    print(json.dumps({"registered": registered, "tools": [t.name for t in tools.tools], "echo": text}))


asyncio.run(main(sys.argv[1]))

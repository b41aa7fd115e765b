"""A FastMCP 4 remote server that takes only bearer tokens its identity provider signed for it
(FastMCP's own JWT verifier: the provider's JWK Set, issuer and this server's audience), for the
team-gateway tests: `python fastmcp_whoami_server.py PORT ISSUER AUDIENCE [--advertise]`; with
`--advertise` it names the provider as its authorization server in its protected-resource
metadata (FastMCP's RemoteAuthProvider), so that a client can sign in there. Its tool `whoami`
answers with the token's subject, its `act` claim and the SHA-256 of the token itself, so a
test can tell whose token reached it and that it was not the caller's own.
"""

import hashlib
import sys

from fastmcp import FastMCP
from fastmcp.server.auth import RemoteAuthProvider
from fastmcp.server.auth.providers.jwt import JWTVerifier
from fastmcp.server.dependencies import get_access_token

PORT, ISSUER, AUDIENCE = int(sys.argv[1]), sys.argv[2], sys.argv[3]

verifier = JWTVerifier(
    jwks_uri=f"{ISSUER}/jwks", issuer=ISSUER, audience=AUDIENCE, algorithm="ES256"
)
auth = verifier
if "--advertise" in sys.argv[4:]:
    auth = RemoteAuthProvider(
        token_verifier=verifier,
        authorization_servers=[ISSUER],
        base_url=f"http://127.0.0.1:{PORT}",
    )
mcp = FastMCP("whoami", auth=auth)


@mcp.tool
def whoami() -> dict:
    """Whose token this call came with."""
    token = get_access_token()
    return {
        "sub": token.claims.get("sub"),
        "act": token.claims.get("act"),
        "tokenSha256": hashlib.sha256(token.token.encode()).hexdigest(),
    }


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=PORT, show_banner=False)

#!/usr/bin/env python3
"""A minimal identity provider for measuring `auth.mode = "external"`: serves RFC 8414 metadata and
a JWK Set on 127.0.0.1:PORT, and prints one ES256 access token for AUDIENCE (valid an hour,
scope `mcp`), then serves until killed. Needs PyJWT and cryptography: the tests' Python
(target/tmp/test-deps/python/bin/python) has both.

Usage: idp.py PORT AUDIENCE
"""

import http.server
import json
import sys
import time

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

port, audience = int(sys.argv[1]), sys.argv[2]
issuer = f"http://127.0.0.1:{port}"
key = ec.generate_private_key(ec.SECP256R1())
public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
public.update({"kid": "bench", "use": "sig", "alg": "ES256"})
metadata = {
    "issuer": issuer,
    "authorization_endpoint": f"{issuer}/authorize",
    "token_endpoint": f"{issuer}/token",
    "jwks_uri": f"{issuer}/jwks",
}
now = int(time.time())
claims = {"iss": issuer, "sub": "bench", "aud": audience, "exp": now + 3600, "iat": now, "scope": "mcp"}
print(jwt.encode(claims, key, algorithm="ES256", headers={"kid": "bench"}), flush=True)


class Provider(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        documents = {"/.well-known/oauth-authorization-server": metadata, "/jwks": {"keys": [public]}}
        document = documents.get(self.path)
        body = json.dumps(document).encode()
        self.send_response(200 if document else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Provider).serve_forever()

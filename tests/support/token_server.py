#!/usr/bin/env python3
"""A registry token service for the remote-pack tests (the distribution project's Bearer token
scheme, docs/spec/auth/token.md and jwt.md): GET /token?service=S&scope=repository:NAME:ACTIONS
answers a JWT signed RS256 by KEY, its certificate in the header's x5c (the registry trusts it
through its rootcertbundle), granting what the scope asks for to a client whose HTTP Basic
credentials are USER:PASSWORD; anyone else gets 401. Listens on 127.0.0.1 at a free port and
prints it on stdout. Each token issued is counted in COUNT_FILE when given.

usage: token_server.py --cert CERT.pem --key KEY.pem --issuer I --service S --user U:P
                       [--count-file F]
"""
import argparse
import base64
import json
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--issuer", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--count-file")
    a = p.parse_args()
    with open(a.cert, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    with open(a.key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
    expected = "Basic " + base64.b64encode(a.user.encode()).decode()
    issued = [0]

    def token(scope):
        access = []
        for item in scope.split(" ") if scope else []:
            kind, _, rest = item.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [x5c]}
        claims = {"iss": a.issuer, "sub": a.user.split(":")[0], "aud": a.service,
                  "exp": now + 300, "nbf": now - 10, "iat": now, "jti": str(uuid.uuid4()),
                  "access": access}
        signing_input = b64url(json.dumps(header).encode()) + "." + \
            b64url(json.dumps(claims).encode())
        signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            query = urllib.parse.parse_qs(url.query)
            if url.path != "/token" or query.get("service", [""])[0] != a.service:
                self.send_response(404)
                self.end_headers()
                return
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="packfs-test-tokens"')
                self.end_headers()
                return
            value = token(" ".join(query.get("scope", [])))
            body = json.dumps({"token": value, "access_token": value, "expires_in": 300}).encode()
            issued[0] += 1
            if a.count_file:
                with open(a.count_file, "w") as f:
                    f.write(str(issued[0]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

"""A storage node on loopback for purge_old_records' tests: a real HTTP server that checks each DELETE's
bearer token as a node would (django.core.signing.loads with NODE_SECRET, max_age=300), records it,
and answers 200, or 500 for the uids in ``failure_uids``, after ``delay`` seconds.

    with StorageNode(secret="SECRET") as node:   # node.url: http://127.0.0.1:<port>
        ...
        node.requests                            # [Request(method, path, claims)]

Two nodes may share one ``requests`` list (tokenserver's tests count the requests to both). The purge
reaches a node on loopback only where NODE_ALLOWED_NETWORKS holds ``LOOPBACK`` (the nodes' tests'
``loopback_nodes`` fixture sets it).
"""

import ipaddress
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.core import signing

from accounts.nodes.purge import TOKEN_SALT

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


@dataclass
class Request:
    method: str
    path: str
    node: str  # the server's URL, to tell two nodes apart
    claims: dict | None  # the token's claims, None if it did not verify


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_DELETE(self):
        node: StorageNode = self.server.node
        claims = node.verify(self.headers.get("authorization", ""))
        with node.lock:
            node.requests.append(Request("DELETE", self.path, node.url, claims))
        if node.delay:
            time.sleep(node.delay)
        match = re.fullmatch(r"/1\.5/(\d+)", self.path)
        status = 401 if claims is None else 500 if match and int(match.group(1)) in node.failure_uids else 200
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()


class StorageNode:
    def __init__(self, *, secret: str, requests: list | None = None):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.node = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.secret = secret
        self.requests: list[Request] = [] if requests is None else requests
        self.failure_uids: set[int] = set()
        self.delay = 0.0
        self.lock = threading.Lock()

    def verify(self, authorization: str) -> dict | None:
        """The claims of a valid ``Bearer`` token, as a node checks them; None otherwise."""
        scheme, _, token = authorization.partition(" ")
        if scheme != "Bearer":
            return None
        try:
            return signing.loads(token, key=self.secret, salt=TOKEN_SALT, max_age=300)
        except signing.BadSignature:
            return None

    def __enter__(self):
        # A short poll: shutdown() waits for it, at every test's end.
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

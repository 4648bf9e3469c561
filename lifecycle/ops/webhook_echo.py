"""A webhook receiver for trying webhooks on one machine: it listens on 127.0.0.1 only, prints each
request it gets (method, path, the Standard Webhooks headers webhook-id and webhook-timestamp, the
body) and answers 204 No Content, which the dispatcher records as delivered.

    python -m lifecycle.ops.webhook_echo --port 8101

The dispatcher refuses loopback addresses unless WEBHOOKS_ALLOW_PRIVATE_URLS=true in the environment
it runs in (.env, for make run). It checks no signature: that is the receiver's job in production (the
``standardwebhooks`` package's ``Webhook(secret).verify(body, headers)``). Standard library only.
"""

import argparse
import signal
import sys
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"
# A body larger than this is read but printed cut (an event's payload is well under it).
PRINTED_BODY_CHARS = 4000


class EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the dispatcher's connection pool expects of a receiver
    server_version = "webhook_echo"

    def log_message(self, format, *args):
        pass  # each request is printed once, by _echo

    def _echo(self):
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            length = 0
        body = self.rfile.read(length).decode("utf-8", errors="replace") if length > 0 else ""
        when = datetime.now().strftime("%H:%M:%S")
        webhook_id = self.headers.get("webhook-id", "-")
        timestamp = self.headers.get("webhook-timestamp", "-")
        shown = body if len(body) <= PRINTED_BODY_CHARS else f"{body[:PRINTED_BODY_CHARS]}... ({len(body)} characters)"
        print(
            f"{when} {self.command} {self.path} webhook-id: {webhook_id} webhook-timestamp: {timestamp}\n  {shown}",
            flush=True,
        )
        self.send_response(204)
        self.end_headers()

    do_POST = do_PUT = do_PATCH = do_GET = do_DELETE = _echo


def _stop(signum, frame):
    raise KeyboardInterrupt  # SIGTERM ends it as Ctrl-C does: the socket closed, "Stopped." printed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lifecycle.ops.webhook_echo", description=__doc__.split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("--port", type=int, default=8101, help="the port on 127.0.0.1 (default 8101; 0: any free)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"--port must be from 0 to 65535, not {args.port}.", file=sys.stderr)
        return 2
    try:
        server = ThreadingHTTPServer((HOST, args.port), EchoHandler)
    except OSError as error:
        print(f"Cannot listen on {HOST}:{args.port}: {error.strerror}; choose another --port.", file=sys.stderr)
        return 1
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, _stop)
    port = server.server_address[1]
    print(f"Listening on http://{HOST}:{port}/ (every request printed, answered 204; Ctrl-C stops).", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("Stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

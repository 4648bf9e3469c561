"""A real HTTP receiver on loopback for the webhook tests and bench/webhooks.py: it records every
request and answers as told (a status, a sequence of statuses, a delay, Retry-After, a redirect).

    with WebhookReceiver() as receiver:          # http://127.0.0.1:<port>/
        receiver.statuses = [503, 200]           # then 200 for good
        ...
        receiver.received                        # [Received(path, headers, body, at)]

``python -m tests.webhook_receiver --port N [--times FILE]`` runs one in its own process that only
answers 204 (the bench), appending each request's arrival (``time.time()``) to FILE.
"""

import argparse
import signal
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.perf_counter() on arrival


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver

    def log_message(self, *args):
        pass

    def do_POST(self):
        receiver: WebhookReceiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if receiver.record:
            with receiver.lock:
                receiver.received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.perf_counter())
                )
        else:
            with receiver.lock:
                receiver.count += 1
                if receiver.times:
                    receiver.times.write(f"{time.time()}\n")
                    receiver.times.flush()
        with receiver.lock:
            receiver.requests += 1
            number = receiver.requests
        if receiver.on_request:
            receiver.on_request(number)
        status, extra = receiver.next_answer()
        if receiver.delay:
            time.sleep(receiver.delay)
        answer = (
            b""
            if status == 204
            else receiver.body
            if receiver.body is not None
            else b'{"ok": true}'
            if status < 300
            else b"no"
        )
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class WebhookReceiver:
    def __init__(self, *, port: int = 0, record: bool = True):
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.server.daemon_threads = True
        self.server.receiver = self
        self.lock = threading.Lock()
        self.received: list[Received] = []
        self.count = 0
        self.record = record
        self.status = 200  # the answer once ``statuses`` is used up
        self.statuses: list[int] = []
        self.headers: dict[str, str] = {}  # sent with every non-2xx answer (Retry-After, Location)
        self.delay = 0.0
        self.body: bytes | None = None  # the answer's body (unless 204); None: a default per status
        self.times = None  # a file each arrival's time.time() is appended to (record=False)
        self.on_request = None  # called with each request's number (from 1) before it is answered
        self.requests = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def next_answer(self) -> tuple[int, dict[str, str]]:
        with self.lock:
            status = self.statuses.pop(0) if self.statuses else self.status
        return status, (self.headers if status >= 300 else {})

    def __enter__(self):
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description="Answer 204 to every POST and count them.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--times", help="append each arrival's time.time() to this file")
    args = parser.parse_args()
    receiver = WebhookReceiver(port=args.port, record=False)
    receiver.status = 204
    if args.times:
        receiver.times = open(args.times, "a")  # noqa: SIM115 (open for the process's life)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    receiver.server.serve_forever()


if __name__ == "__main__":
    main()

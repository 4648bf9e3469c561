"""A real SMTP server on loopback (aiosmtpd) that records what it accepts, for the mailroom tests."""

import asyncio
import email
import email.policy
import logging
import socket
import threading
import time

from aiosmtpd.controller import Controller

# aiosmtpd logs every SMTP command at INFO.
logging.getLogger("mail.log").setLevel(logging.WARNING)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RecordingHandler:
    def __init__(self):
        self.messages: list[email.message.EmailMessage] = []
        self.accepted_at: list[float] = []  # time.perf_counter() when each message was accepted
        self.lock = threading.Lock()
        self.refuse_recipients: str | None = None  # e.g. "550 5.1.1 No such mailbox"
        self.delay = 0.0  # seconds before accepting each message
        # The answer to a whole message (after its body) for these recipients, e.g. "554 5.6.0 Spam".
        self.refuse_messages_to: dict[str, str] = {}
        # Recipients whose message the server takes whole and then hangs up on, without an answer.
        self.hang_up_on_messages_to: set[str] = set()
        # Called with each message's number (from 1) once its body is in, before it is answered.
        self.before_answer = None
        self.received = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.refuse_recipients:
            return self.refuse_recipients
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.received += 1
        if self.before_answer:
            self.before_answer(self.received)
        if self.delay:
            await asyncio.sleep(self.delay)
        for recipient in envelope.rcpt_tos:
            if recipient in self.hang_up_on_messages_to:
                server.transport.close()
                return "250 never read: the connection is closed"
            if recipient in self.refuse_messages_to:
                return self.refuse_messages_to[recipient]
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.lock:
            self.messages.append(message)
            self.accepted_at.append(time.perf_counter())
        return "250 Message accepted for delivery"


class SMTPServer:
    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.handler = RecordingHandler()
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self):
        with self.handler.lock:
            return list(self.handler.messages)

    def token_ids(self) -> list[int]:
        return [int(message["X-Lifecycle-Token"]) for message in self.messages]

    def start(self):
        self.controller.start()
        return self

    def stop(self):
        self.controller.stop()

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"


class SMTPServerProcess:
    """The same server in a process of its own (as a real mail server is), for bench/mailroom.py.
    It prints one line per accepted message: the wall-clock time and the token id."""

    def __init__(self):
        self.port = free_port()
        self.accepted: list[tuple[float, int]] = []
        self.lock = threading.Lock()

    def start(self):
        import subprocess
        import sys

        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.smtp", str(self.port)], stdout=subprocess.PIPE, text=True, bufsize=1
        )
        assert self.process.stdout.readline().strip() == "ready"
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def _read(self):
        for line in self.process.stdout:
            accepted_at, token_id = line.split()
            with self.lock:
                self.accepted.append((float(accepted_at), int(token_id)))

    def count(self) -> int:
        with self.lock:
            return len(self.accepted)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"


class _PrintingHandler(RecordingHandler):
    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        print(time.time(), message["X-Lifecycle-Token"] or 0, flush=True)
        return "250 Message accepted for delivery"


if __name__ == "__main__":
    import sys

    controller = Controller(_PrintingHandler(), hostname="127.0.0.1", port=int(sys.argv[1]))
    controller.start()
    print("ready", flush=True)
    try:
        threading.Event().wait()
    finally:
        controller.stop()

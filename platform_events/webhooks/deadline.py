"""One deadline for a whole attempt: connecting, sending and reading the answer.

httpx's timeouts bound each read and write, not their sum: a receiver dripping a byte of its
headers every few seconds could hold an attempt for hours, and with it the dispatcher's lease.
``http.post`` opens ``attempt_deadline(seconds)`` around one request; the guarded backend's streams
give every read and write at most what is left of it. The client is synchronous, so the request
runs in the thread (and context) that set the deadline.
"""

import contextlib
import time
from contextvars import ContextVar

import httpcore

_deadline: ContextVar[float | None] = ContextVar("webhook_attempt_deadline", default=None)


@contextlib.contextmanager
def attempt_deadline(seconds: float):
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def bounded(timeout: float | None, timeout_error: type[Exception]) -> float | None:
    """``timeout``, shortened to what is left of the deadline; past it, ``timeout_error``."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise timeout_error("the attempt's deadline has passed")
    return remaining if timeout is None else min(timeout, remaining)


# A write up to this size waits for the next one (httpcore writes a request's head, then its body).
HELD_AT_MOST = 16 * 1024


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose reads and writes end by the attempt's deadline.

    A request's head leaves with its body in one send(), not in two: one segment, so the receiver
    wakes and reads once (a webhook's head and body are a few hundred bytes each)."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream
        self._held = b""  # a small write waiting for the next one, or for a read

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            self._send(b"", timeout)
        return self._stream.read(max_bytes, bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not self._held and 0 < len(buffer) <= HELD_AT_MOST:
            self._held = bytes(buffer)
            return
        self._send(buffer, timeout)

    def _send(self, buffer: bytes, timeout: float | None) -> None:
        held, self._held = self._held, b""
        if held and len(buffer) <= HELD_AT_MOST:
            buffer = held + buffer
        elif held:
            self._send(held, timeout)
        # Not the stream's own write: httpcore's loops send() under one socket timeout, and a receiver
        # reading a little within each would keep a large body's write going past the deadline.
        sock = self._stream.get_extra_info("socket")
        view = memoryview(buffer)
        try:
            while view:
                sock.settimeout(bounded(timeout, httpcore.WriteTimeout))
                view = view[sock.send(view) :]
        except TimeoutError as error:
            raise httpcore.WriteTimeout(error) from error
        except OSError as error:
            raise httpcore.WriteError(error) from error

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return DeadlineStream(
            self._stream.start_tls(ssl_context, server_hostname, bounded(timeout, httpcore.ConnectTimeout))
        )

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)

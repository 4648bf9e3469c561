"""Attacks on the webhook dispatcher's transport: posting straight to httpx's transport (http.post over
GuardedTransport, deadline.py), against real receivers on loopback (raw sockets, or
tests/webhook_receiver.py)."""

import ipaddress
import socket
import ssl
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from platform_events.webhooks import http

pytestmark = pytest.mark.attack


class RawReceiver:
    """A loopback server handling each connection with ``answer(conn, number)`` in its own thread
    (``number`` counts connections from 1); ``stop`` is set when the test is done with it."""

    def __init__(self, answer, *, rcvbuf: int | None = None):
        self.listener = socket.create_server(("127.0.0.1", 0))
        if rcvbuf:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.answer = answer
        self.connections = 0
        self.stop = threading.Event()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True).start()

    def _serve(self, conn, number):
        with conn:
            try:
                self.answer(conn, number, self.stop)
            except OSError:
                pass

    def __enter__(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.listener.close()


def read_request(conn) -> bytes:
    """One whole request (head and Content-Length body) from ``conn``; b"" when it closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        body += chunk
    return head + b"\r\n\r\n" + body


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def serve_ok_after(first):
    """Connection 1 answered by ``first(conn, stop)``, every later one with 200 "ok" per request."""

    def answer(conn, number, stop):
        if number == 1:
            first(conn, stop)
            return
        while read_request(conn):
            conn.sendall(OK)

    return answer


def post(transport, url):
    return http.post(transport, url, body=b"{}", headers={"content-type": "application/json"})


def first_then_a_fresh_connection(first_answer) -> http.Attempt:
    """Two attempts over one transport: the first answered by ``first_answer(conn, stop)``; the second
    must be answered 200 "ok" over a new connection (the first's not reused), and the first may not
    outlast its deadline. Returns the first attempt."""
    with RawReceiver(serve_ok_after(first_answer)) as receiver, http.new_transport() as transport:
        started = time.monotonic()
        first = post(transport, receiver.url)
        took = time.monotonic() - started
        second = post(transport, receiver.url)
    assert took < bound(), f"one attempt took {took:.1f}s"
    assert (second.outcome, second.status, second.excerpt) == ("delivered", 200, "ok")
    assert receiver.connections == 2
    return first


@pytest.fixture
def short_timeouts(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    settings.WEBHOOKS_CONNECT_TIMEOUT_SECONDS, settings.WEBHOOKS_TIMEOUT_SECONDS = 1, 1
    return settings


def bound() -> float:
    """A generous upper bound for one attempt: its deadline and some slack for a busy machine."""
    return http.attempt_seconds() + 1.5


@pytest.fixture
def tls(tmp_path, monkeypatch):
    """A certificate for 127.0.0.1 that the dispatcher's transports trust; yields the server's context."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    monkeypatch.setattr(http, "_ssl_context", lambda: ssl.create_default_context(cafile=str(cert_file)))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    return server


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_receiver_reading_the_request_slowly_cannot_hold_the_attempt_past_its_deadline(
    short_timeouts, request, scheme
):
    """Each socket send() waits at most the write timeout, but httpcore's SyncStream.write loops over
    them under that one timeout: a receiver reading some every 0.1 s would keep one attempt going for
    as long as the body lasts (about 12 s here, for a 2.5 s deadline), and the run's lease with it.
    Over TLS one SSL_write is bounded as a whole already; that variant checks the deadline's write
    loop there."""
    short_timeouts.WEBHOOKS_CONNECT_TIMEOUT_SECONDS, short_timeouts.WEBHOOKS_TIMEOUT_SECONDS = 0.5, 2
    server_tls = request.getfixturevalue("tls") if scheme == "https" else None

    def read_slowly(conn, number, stop):
        if server_tls:
            conn = server_tls.wrap_socket(conn, server_side=True)
        if number == 1:  # a small POST first: the write path works over this scheme
            read_request(conn)
            conn.sendall(OK)
        began = time.monotonic()
        while not stop.is_set() and time.monotonic() - began < 6:
            read = 0
            while read < 256 * 1024:
                chunk = conn.recv(256 * 1024)
                if not chunk:
                    return
                read += len(chunk)
            time.sleep(0.1)

    body = b"x" * (32 * 1024 * 1024)  # far more than the client's and the receiver's socket buffers
    with RawReceiver(read_slowly, rcvbuf=65536) as receiver:
        url = receiver.url.replace("http:", f"{scheme}:")
        with http.new_transport() as transport:
            small = post(transport, url)
            started = time.monotonic()
            attempt = http.post(transport, url, body=body, headers={})
            took = time.monotonic() - started
    assert (small.outcome, small.excerpt) == ("delivered", "ok")
    assert attempt.outcome == "retry" and attempt.status is None
    assert "timed out" in attempt.excerpt
    assert took < bound(), f"one attempt took {took:.1f}s"


def test_a_retry_after_date_whose_offset_overflows_is_ignored_not_raised(short_timeouts):
    """email.utils.parsedate_to_datetime raises OverflowError (not ValueError) for an offset too large
    for a C int: raised from http.post, it would fail the run that claimed the delivery."""
    with RawReceiver(
        lambda conn, number, stop: (
            read_request(conn)
            and conn.sendall(
                b"HTTP/1.1 503 Busy\r\nRetry-After: 1 Jan 2030 00:00:00 +99999999999999999999\r\n"
                b"Content-Length: 4\r\n\r\nbusy"
            )
        )
    ) as receiver:
        with http.new_transport() as transport:
            attempt = post(transport, receiver.url)
    assert (attempt.outcome, attempt.status, attempt.retry_after, attempt.excerpt) == ("retry", 503, None, "busy")


@pytest.mark.parametrize(
    "interim",
    [
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n",
    ],
)
def test_informational_answers_forever_end_at_the_deadline_and_the_connection_is_not_reused(short_timeouts, interim):
    """1xx answers are not the answer: httpcore reads past them, each read under httpx's read timeout.
    A receiver sending one every 50 ms never trips it; the attempt's deadline ends it, and the next
    delivery goes over a new connection."""

    def forever(conn, stop):
        read_request(conn)
        while not stop.is_set():
            conn.sendall(interim)
            time.sleep(0.05)

    first = first_then_a_fresh_connection(forever)
    assert first.outcome == "retry" and first.status is None and "timed out" in first.excerpt


def test_an_unasked_101_switching_protocols_is_a_failed_attempt_and_its_connection_is_dropped(short_timeouts):
    """A 101 answer to a request that proposed no upgrade: not delivered, never raised, and the next
    delivery does not go over the switched connection."""

    def switch(conn, stop):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x02hi")
        stop.wait(5)

    assert first_then_a_fresh_connection(switch).outcome == "retry"


def test_a_huge_or_endless_answer_costs_one_excerpt_and_its_connection_is_not_reused(short_timeouts):
    """A 200 whose body never ends (chunked, fast) is read up to an excerpt within the deadline; the
    connection, left half-read, is closed rather than handed to the next delivery, whose answer would
    otherwise be the rest of this one."""

    def endless(conn, stop):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while not stop.is_set():
            conn.sendall(b"400\r\n" + b"HTTP/1.1 200 OK\r\n".ljust(0x400, b"a") + b"\r\n")

    first = first_then_a_fresh_connection(endless)
    assert (first.outcome, first.status) == ("delivered", 200)
    assert len(first.excerpt) == http.EXCERPT_CHARS and first.excerpt.startswith("HTTP/1.1 200 OK")


def test_bytes_a_receiver_sent_after_its_answer_are_not_the_next_deliverys_answer(short_timeouts):
    """A receiver that sends a second answer (or a body longer than its Content-Length) leaves bytes h11
    has read but httpcore's idle check cannot see. Were the connection reused, the next delivery would
    take those bytes for its answer ("delivered") before its request had even gone out, and the
    receiver's real answer to it (500) would be read by the delivery after."""

    def answers_twice(conn, stop):
        read_request(conn)
        conn.sendall(OK + b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
        while read_request(conn):
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nno")

    first = first_then_a_fresh_connection(answers_twice)
    assert (first.outcome, first.excerpt) == ("delivered", "ok")


def test_a_receiver_closing_mid_answer_is_a_failed_attempt_and_the_next_one_reconnects(short_timeouts):
    def close_early(conn, stop):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")

    first = first_then_a_fresh_connection(close_early)
    assert first.outcome == "retry" and first.status is None and "RemoteProtocolError" in first.excerpt


def test_no_proxy_is_taken_from_the_environment(short_timeouts, monkeypatch, receiver):
    """httpx.Client(trust_env=False) keeps HTTP_PROXY and its kin out; the transport alone must too."""
    proxied = []

    def record(conn, number, stop):
        proxied.append(conn.recv(65536))

    with RawReceiver(record) as proxy:
        proxy_url = proxy.url.removesuffix("/hook")
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, proxy_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with http.new_transport() as transport:
            attempt = post(transport, receiver.url)
    assert (attempt.outcome, attempt.status) == ("delivered", 200)
    assert len(receiver.received) == 1 and proxied == []

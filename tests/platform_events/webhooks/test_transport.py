"""The webhook transport's pieces: the secrets' encryption, the signatures (the specification's own test
vector), the SSRF guard, and the settings that configure them."""

import base64
import ipaddress
import os
import socket
import threading
import time
import uuid
from datetime import UTC, datetime

import httpcore
import pytest
from django.core.exceptions import ImproperlyConfigured
from standardwebhooks.webhooks import Webhook

from lifecycle.configuration import read_key_ring, read_seconds_list
from platform_events.webhooks import http
from platform_events.webhooks.addresses import AddressPolicy, address_problem, check_url, forbidden_address
from platform_events.webhooks.deadline import HELD_AT_MOST, DeadlineStream
from platform_events.webhooks.secrets import SecretKeyError, decrypt_secret, encrypt_secret, new_signing_secret
from platform_events.webhooks.signing import signature_headers
from tests.webhook_receiver import WebhookReceiver


def test_the_specifications_test_vector():
    # standard-webhooks/standard-webhooks, spec/standard-webhooks.md and its libraries' tests.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    headers = signature_headers(
        msg_id="msg_p5jXN8AQM9LWM0D4loKWxJek",
        timestamp=datetime.fromtimestamp(1614265330, UTC),
        body='{"test": 2432232314}',
        secrets=[secret],
    )
    assert headers == {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }


def test_a_secret_decrypts_only_on_its_own_row_and_under_a_key_still_held(settings):
    settings.WEBHOOK_SECRET_KEYS = {"new": os.urandom(32), "old": os.urandom(32)}
    secret = new_signing_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    row, other = uuid.uuid4().bytes, uuid.uuid4().bytes
    blob, key_id = encrypt_secret(secret, aad=row)
    assert key_id == "new" and secret.encode() not in blob and secret.removeprefix("whsec_").encode() not in blob
    assert decrypt_secret(blob, key_id, aad=row) == secret
    with pytest.raises(SecretKeyError, match="belongs to another endpoint"):
        decrypt_secret(blob, key_id, aad=other)
    with pytest.raises(SecretKeyError, match="belongs to another endpoint"):
        decrypt_secret(blob[:-1] + bytes([blob[-1] ^ 1]), key_id, aad=row)
    settings.WEBHOOK_SECRET_KEYS = {"newer": os.urandom(32)}
    with pytest.raises(SecretKeyError, match="no longer holds") as refused:
        decrypt_secret(blob, key_id, aad=row)
    assert secret not in str(refused.value)


@pytest.mark.parametrize(
    "value, message",
    [
        ("k1", "must be KEY_ID:BASE64_KEY"),
        ("k1:%%%", "not valid base64"),
        ("k1:" + base64.b64encode(b"short").decode(), "must be 32 bytes"),
        ("k1:{k},k1:{k}", "appears twice"),
    ],
)
def test_a_bad_key_ring_is_one_sentence(monkeypatch, value, message):
    monkeypatch.setenv("WEBHOOK_SECRET_KEYS", value.format(k=base64.b64encode(os.urandom(32)).decode()))
    with pytest.raises(ImproperlyConfigured, match=message):
        read_key_ring("WEBHOOK_SECRET_KEYS")


def test_the_retry_schedule_setting(monkeypatch):
    monkeypatch.setenv("WEBHOOKS_RETRY_SCHEDULE", "0,5,300")
    assert read_seconds_list("WEBHOOKS_RETRY_SCHEDULE", []) == [0, 5, 300]
    monkeypatch.setenv("WEBHOOKS_RETRY_SCHEDULE", "5,soon")
    with pytest.raises(ImproperlyConfigured, match="whole seconds"):
        read_seconds_list("WEBHOOKS_RETRY_SCHEDULE", [])


def test_the_schedule_and_retry_after(settings):
    settings.WEBHOOKS_RETRY_SCHEDULE = [5, 300]
    assert [http.next_attempt_delay(n, None) for n in (1, 2, 3)] == [5, 300, None]
    assert http.next_attempt_delay(1, 60) == 60 and http.next_attempt_delay(2, 60) == 300
    assert http._retry_after("\u00b2") is None  # a digit to str.isdigit(), not to float()
    assert http._retry_after("120") == 120 and http._retry_after("-1") is None and http._retry_after("soon") is None
    assert http._retry_after("99999999") == http.RETRY_AFTER_CAP_SECONDS


@pytest.mark.parametrize(
    "url, refused",
    [
        ("https://hooks.example.com/in", None),
        ("http://hooks.example.com/in", "https://"),
        ("https://user:pw@hooks.example.com/", "user name or password"),
        ("https://hooks.example.com/#x", "fragment"),
        ("https://127.0.0.1/", "loopback"),
        ("https://[::ffff:169.254.169.254]/", "link-local"),
        ("https://10.1.2.3/", "private"),
        ("https://100.64.0.1/", "non-public"),
        ("https://localhost:8443/", "localhost"),
        ("https://hooks.example.com:99999/", "port"),
        ("https://" + "a" * 2050 + ".com/", "longer than"),
        ("https:///nohost", "no host"),
        ("https://2130706433/", "loopback"),
        ("https://127.1/", "loopback"),
        ("https://0x7f000001/", "loopback"),
        ("https://[fec0::1]/", "site-local"),
        ("https://xn--localhost-/", "cannot be requested"),
    ],
)
def test_check_url(settings, url, refused):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    problem = check_url(url)
    assert (problem is None) if refused is None else (refused in problem)


@pytest.mark.parametrize("url", ["http://hooks.example.com/in", "https://127.0.0.1/", "https://localhost:8443/"])
def test_a_refusal_the_setting_would_lift_names_it(settings, url):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    assert "WEBHOOKS_ALLOW_PRIVATE_URLS=true" in check_url(url)
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    assert check_url(url) is None


def test_forbidden_addresses_include_ipv4_inside_ipv6(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    for address in ("127.0.0.1", "::1", "169.254.169.254", "fd00::1", "64:ff9b::7f00:1", "2002:7f00:1::", "0.0.0.0"):
        assert forbidden_address(address), address
    assert forbidden_address(ipaddress.ip_address("93.184.215.14")) is None


def test_address_problem_allows_the_networks_given_and_nothing_else():
    """The guard without the webhooks' setting, for a caller that allows networks besides public addresses
    (the storage nodes': accounts/nodes/addresses.py)."""
    private = [ipaddress.ip_network("10.0.0.0/8")]
    assert address_problem("10.1.2.3") == "10.1.2.3, a private address"
    assert address_problem("10.1.2.3", private) is None
    assert address_problem("::ffff:10.1.2.3", private) is None  # the same address, inside an IPv6 one
    assert address_problem("169.254.169.254", private) == "169.254.169.254, a link-local (or cloud metadata) address"
    assert address_problem("127.0.0.1", private) == "127.0.0.1, a loopback address"
    assert address_problem("93.184.215.14") is None


def test_a_guarded_transport_connects_where_its_policy_allows(settings):
    """Another caller's policy, not the webhooks' setting, decides: WEBHOOKS_ALLOW_PRIVATE_URLS on changes
    nothing for it. Its refusal says what it adds."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    loopback = [ipaddress.ip_network("127.0.0.0/8")]
    public_only = AddressPolicy(forbidden=address_problem, refusal="which no setting allows")
    with_loopback = AddressPolicy(forbidden=lambda ip: address_problem(ip, loopback), refusal="never said")
    with WebhookReceiver() as receiver:
        with http.GuardedTransport(policy=public_only) as transport:
            refused = http.post(transport, receiver.url, body=b"{}", headers={})
        with http.GuardedTransport(policy=with_loopback) as transport:
            reached = http.post(transport, receiver.url, body=b"{}", headers={})
    assert refused.excerpt == "refused: 127.0.0.1 resolves to 127.0.0.1, a loopback address, which no setting allows"
    assert (reached.outcome, len(receiver.received)) == ("delivered", 1)


def test_dns_rebinding_cannot_reach_loopback(settings, monkeypatch):
    """The name resolves to a public address when the URL is checked and to loopback when connecting:
    the connection is refused, and the receiver on loopback hears nothing."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    with WebhookReceiver() as receiver:
        port = int(receiver.url.split(":")[2].split("/")[0])
        assert check_url(f"https://rebind.example.com:{port}/hook") is None
        monkeypatch.setattr(
            socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        )
        settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
        with http.new_transport() as transport:
            attempt = http.post(transport, f"http://rebind.example.com:{port}/hook", body=b"{}", headers={})
        assert attempt.outcome == "retry" and attempt.status is None
        assert "refused: rebind.example.com resolves to a loopback address" in attempt.excerpt
        assert "127.0.0.1" not in attempt.excerpt  # what a name resolves to inside is not shown
        assert receiver.received == []


@pytest.mark.parametrize(
    ("inside", "kind"),
    [("10.1.2.3", "a private address"), ("169.254.169.254", "a link-local (or cloud metadata) address"),
     ("::ffff:10.1.2.3", "a private address")],
)  # fmt: skip
def test_a_refusal_says_what_kind_of_address_a_name_resolves_to_never_the_address(settings, monkeypatch, inside, kind):
    """The excerpt is shown to Integrators: "db.internal resolves to 10.1.2.3" would map the inside."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    family = socket.AF_INET6 if ":" in inside else socket.AF_INET
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(family, socket.SOCK_STREAM, 6, "", (inside, 443))])
    with http.new_transport() as transport:
        attempt = http.post(transport, "https://db.internal/hook", body=b"{}", headers={})
    assert f"refused: db.internal resolves to {kind}, which WEBHOOKS_ALLOW_PRIVATE_URLS" in attempt.excerpt
    assert "10.1.2.3" not in attempt.excerpt and "169.254" not in attempt.excerpt


def test_the_signature_verifies_with_the_library(settings):
    secret = new_signing_secret()
    body = b'{"type": "account.created", "timestamp": "2026-11-23T10:00:00Z", "data": {}}'
    headers = signature_headers(msg_id="e1", timestamp=datetime.now(UTC), body=body, secrets=[secret])
    assert Webhook(secret).verify(body, headers)["type"] == "account.created"


def test_a_receiver_that_trickles_its_answer_is_cut_off_at_the_attempts_deadline(settings):
    """httpx's timeouts bound each read: a byte of headers every 0.5 s would never trip a 3 s read
    timeout. One deadline bounds the whole attempt (platform_events/webhooks/deadline.py)."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    settings.WEBHOOKS_CONNECT_TIMEOUT_SECONDS, settings.WEBHOOKS_TIMEOUT_SECONDS = 1, 2
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()
    drip = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100
    sent = []

    def trickle():
        conn, _ = listener.accept()
        conn.recv(65536)
        for byte in drip:
            if stop.is_set():
                break
            conn.sendall(bytes([byte]))
            sent.append(byte)
            time.sleep(0.5)
        conn.close()

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    with http.new_transport() as transport:
        attempt = http.post(transport, f"http://127.0.0.1:{port}/", body=b"{}", headers={})
    stop.set()
    listener.close()
    assert attempt.outcome == "retry" and "timed out" in attempt.excerpt
    assert len(sent) < len(drip)  # cut off by the deadline, not by the end of the drip


def test_a_receivers_cookie_is_not_sent_back_and_no_compressed_answer_is_asked_for(settings):
    """Attempts go straight to httpx's transport, not through a client: a Set-Cookie from one
    receiver's answer is never sent with the next delivery (an httpx.Client keeps it in its jar and
    sends it back), and no Accept-Encoding asks for an answer whose compressed bytes would fill the
    excerpt. The User-Agent names the sender."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    with WebhookReceiver() as receiver, http.new_transport() as transport:
        receiver.statuses = [503]
        receiver.headers = {"Set-Cookie": "session=from-the-receiver; Path=/"}
        first = http.post(transport, receiver.url, body=b"{}", headers={})
        second = http.post(transport, receiver.url, body=b"{}", headers={})
    assert (first.status, second.status) == (503, 200)
    assert [r.headers.get("cookie") for r in receiver.received] == [None, None]
    assert [r.headers.get("accept-encoding") for r in receiver.received] == [None, None]
    assert receiver.received[1].headers["user-agent"] == http.USER_AGENT
    assert second.excerpt == '{"ok": true}'


class SocketStream(httpcore.NetworkStream):
    """httpcore's network stream over a plain socket (a socketpair's end)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.sock.settimeout(timeout)
        return self.sock.recv(max_bytes)

    def get_extra_info(self, info: str):
        return self.sock if info == "socket" else None


def test_a_requests_head_leaves_with_its_body_in_one_send():
    """httpcore writes a request's head, then its body, then nothing (the end of a sized body): the head
    waits for the body, so one send() carries both and the receiver wakes once. A socket that keeps
    each send() a message of its own (SOCK_SEQPACKET) shows the sends; a body past HELD_AT_MOST goes
    in sends of its own after the head, and a read sends what is held first."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        stream = DeadlineStream(SocketStream(ours))
        head, body = b"POST /hook HTTP/1.1\r\nhost: x\r\ncontent-length: 9\r\n\r\n", b'{"id": 1}'
        for data in (head, body, b""):
            stream.write(data, timeout=1)
        assert theirs.recv(65536) == head + body
        stream.write(head, timeout=1)
        stream.write(b"x" * (HELD_AT_MOST + 1), timeout=1)
        assert theirs.recv(65536) == head
        assert theirs.recv(65536) == b"x" * (HELD_AT_MOST + 1)
        stream.write(head, timeout=1)
        theirs.send(b"HTTP/1.1 204 No Content\r\n\r\n")
        assert stream.read(65536, timeout=1) == b"HTTP/1.1 204 No Content\r\n\r\n"
        assert theirs.recv(65536) == head

"""The client's address behind reverse proxies (platform_events/client_ip.py), for the lock-out and the
audit trail."""

import pytest
from django.test import RequestFactory

from platform_events.client_ip import address_key, client_ip, client_key

PROXY = "10.0.0.2"


def request(xff: str | None = None, remote: str = PROXY):
    meta = {"REMOTE_ADDR": remote} | ({"HTTP_X_FORWARDED_FOR": xff} if xff is not None else {})
    return RequestFactory().get("/", **meta)


@pytest.mark.parametrize(
    "proxies, xff, expected",
    [
        (0, None, PROXY),
        (0, "198.51.100.9", PROXY),  # no proxy trusted: a client can write the header, so it is ignored
        (1, "203.0.113.7", "203.0.113.7"),  # one proxy that appended the client
        (1, "198.51.100.9, 203.0.113.7", "203.0.113.7"),  # the client's own entry, on the left, is not trusted
        (2, "198.51.100.9, 203.0.113.7, 10.0.0.1", "203.0.113.7"),  # two proxies
        (2, "203.0.113.7", PROXY),  # fewer entries than proxies: it bypassed them; the peer is all we know
        (1, "not-an-address", PROXY),
        (1, "2001:db8::7", "2001:db8::7"),
    ],
)
def test_the_client_is_the_entry_the_outermost_trusted_proxy_appended(settings, proxies, xff, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    assert client_ip(request(xff)) == expected


@pytest.mark.parametrize(
    "address, key",
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"),  # the first address of its /64
        ("2001:db8:1:2::1", "2001:db8:1:2::"),
        ("2001:DB8:1:2:0:0:0:9", "2001:db8:1:2::"),  # however it is spelled
        ("2001:db8:1:3::1", "2001:db8:1:3::"),  # the next /64 is another client
        ("::ffff:192.0.2.1", "192.0.2.1"),  # an IPv4 client through an IPv6 socket
    ],
)
def test_the_limits_and_the_lock_out_count_an_ipv6_client_by_its_slash_64(address, key):
    assert client_key(request(remote=address)) == key
    assert client_ip(request(remote=address)) == address  # the audit trail keeps the whole address
    assert address_key(address) == key  # the same rule for an address a service passes on (POST /sessions)


def test_no_address_is_no_key():
    assert client_key(request(remote="")) is None

"""The address of the client behind a request: one rule for the lock-out (django-axes), the limits and
the audit trail.

Behind reverse proxies, REMOTE_ADDR is the nearest proxy's address: five wrong passwords from
anywhere would lock a staff login out for everyone, and every audit row would name the proxy. Each
proxy appends the address it received the request from to X-Forwarded-For, so with
TRUSTED_PROXY_COUNT proxies in front, the client is the entry the outermost of them appended:
the TRUSTED_PROXY_COUNT-th from the right (Django REST framework's NUM_PROXIES rule). Entries further
left were written by the client and are never trusted; with no proxy counted (the default), the
header is ignored altogether.

Not django-ipware: its proxy_count counts the hops listed inside X-Forwarded-For, so behind one
proxy that appends only the client it answers None, and with a count of 0 it takes the client's own
entry (python-ipware 4.1.1; docs/decisions.md, "Our own client address rule, not django-ipware").
"""

import ipaddress

from django.conf import settings


def client_ip(request) -> str | None:
    """The client's address; REMOTE_ADDR when no proxy is trusted or the request bypassed them."""
    remote = request.META.get("REMOTE_ADDR") or None
    proxies = settings.TRUSTED_PROXY_COUNT
    if not proxies:
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    if len(hops) < proxies:
        # Fewer entries than proxies: it did not come through all of them; the peer is all we know.
        return remote
    candidate = hops[-proxies]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:  # not an address: a misconfigured proxy, or a forgery that reached this far
        return remote


# One host, or one customer of a provider, is given a whole IPv6 /64 (RFC 6177): counted per address,
# it could take 2**64 fresh ones.
IPV6_CLIENT_PREFIX = 64


def client_key(request) -> str | None:
    """The client as the limits and the lock-out count it: its IPv4 address, or the first address of
    its IPv6 /64 (an IPv4-mapped IPv6 address is its IPv4 address). The audit trail keeps the whole
    address (``client_ip``)."""
    address = client_ip(request)
    if address is None:
        return None
    return address_key(address)


def address_key(address: str) -> str:
    """``address`` as one client (``client_key``'s rule): an IPv4 address, or the first address of an
    IPv6 /64; text that is not an address (REMOTE_ADDR as a server put it) as it is."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if parsed.version == 6:
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_CLIENT_PREFIX}", strict=False).network_address)
    return str(parsed)

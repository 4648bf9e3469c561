"""The SSRF guard: an endpoint's URL is https to a public address, checked when staff add it and on
the address actually connected to at every delivery (docs/events.md, "SSRF guard").

Checking the URL's host name when it is saved is not enough: its DNS may later point at
127.0.0.1 or at a cloud's metadata service (169.254.169.254), or answer differently between a check
and the connection (DNS rebinding). ``GuardedBackend`` resolves the name itself when the dispatcher
connects, refuses a forbidden address and connects to the very address it checked; TLS still
verifies the certificate against the URL's host name. ``WEBHOOKS_ALLOW_PRIVATE_URLS`` lifts all this
(and allows plain http) for development and tests.

The storage nodes' purge (accounts/nodes/purge.py) uses the same guard with its own ``AddressPolicy``:
public addresses, and the networks the operator allows in ``NODE_ALLOWED_NETWORKS`` (docs/nodes.md).
"""

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings

from platform_events.webhooks.deadline import DeadlineStream, bounded

MAX_URL_LENGTH = 2048
NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Names that mean this machine, whatever DNS says.
LOCALHOST_NAMES = {"localhost", "localhost.localdomain"}
LOOPBACKS = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
# What lifts the guard, said wherever it refuses: set for one command alone, the listener that
# delivers would still refuse the endpoint.
ALLOWED_WITH_SETTING = (
    "allowed only with WEBHOOKS_ALLOW_PRIVATE_URLS=true, for development: set it in .env, which the web server,"
    " the webhook listener and the commands all read, and restart them"
)


def check_url(url: str) -> str | None:
    """None when ``url`` may be an endpoint's, else why not, in one sentence."""
    if len(url) > MAX_URL_LENGTH:
        return f"The URL is longer than {MAX_URL_LENGTH} characters."
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return "The URL holds a space or a control character."
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "The URL is not valid (its port must be a number from 1 to 65535)."
    allowed = {"https", "http"} if settings.WEBHOOKS_ALLOW_PRIVATE_URLS else {"https"}
    if parts.scheme.lower() not in allowed:
        return f"The URL must start with https:// (plain http:// is {ALLOWED_WITH_SETTING})."
    if not parts.hostname:
        return "The URL names no host."
    try:
        httpx.Request("POST", url)  # what the dispatcher will request: parseable, its host IDNA-encodable
    except (httpx.InvalidURL, UnicodeError, ValueError):
        return "The URL cannot be requested (its host is not a valid name or address)."
    if parts.username is not None or parts.password is not None:
        return "The URL must not hold a user name or password; the signature authenticates each delivery."
    if parts.fragment:
        return "The URL must not have a #fragment."
    if port == 0:
        return "The URL's port must be from 1 to 65535."
    if problem := host_problem(parts.hostname, forbidden_address):
        return f"The URL names {problem} ({ALLOWED_WITH_SETTING})."
    return None


def host_problem(
    host: str, forbidden: Callable[[ipaddress.IPv4Address | ipaddress.IPv6Address], str | None]
) -> str | None:
    """What a URL's ``host`` names when ``forbidden`` refuses it ("127.0.0.1, a loopback address", "this
    machine, localhost"), None otherwise. A name other than localhost is checked when it is connected to."""
    literal = _literal_address(host)
    if literal is not None:
        return forbidden(literal)
    if host.rstrip(".").lower() in LOCALHOST_NAMES and all(forbidden(ip) for ip in LOOPBACKS):
        return "this machine, localhost"
    return None


def _literal_address(host: str):
    """The address a host written as one means, also in the forms the C resolver reads (127.1,
    2130706433, 0x7f000001, 0177.0.0.1: all 127.0.0.1); None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, UnicodeError, ValueError):
        return None


def forbidden_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address | str) -> str | None:
    """What kind of address ``ip`` is when a webhook may not be sent to it ("127.0.0.1, a loopback
    address"), None when it is public (or WEBHOOKS_ALLOW_PRIVATE_URLS)."""
    if settings.WEBHOOKS_ALLOW_PRIVATE_URLS:
        return None
    return address_problem(ip)


def address_problem(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | str,
    allowed: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network] = (),
) -> str | None:
    """What kind of address ``ip`` is when it is neither public nor in one of the ``allowed`` networks
    ("127.0.0.1, a loopback address"); None when it may be connected to."""
    ip = ipaddress.ip_address(ip)
    if any(ip in network for network in allowed):
        return None
    shown = str(ip)
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv4 address inside an IPv6 one reaches that IPv4 address.
        embedded = (
            ip.ipv4_mapped or ip.sixtofour or (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in NAT64 else None)
        )
        if embedded is None and ip.teredo:
            embedded = ip.teredo[1]
        if embedded is not None:
            if problem := address_problem(embedded, allowed):
                return f"{shown} ({problem})"
            return None
    for kind, test in (
        ("a loopback", ip.is_loopback),
        ("an unspecified", ip.is_unspecified),
        ("a link-local (or cloud metadata)", ip.is_link_local),
        ("a multicast", ip.is_multicast),
        ("a private", ip.is_private),
        ("a reserved", ip.is_reserved),
        ("a site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local),
        ("a non-public", not ip.is_global),
    ):
        if test:
            return f"{shown}, {kind} address"
    return None


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses a guarded connection may reach (``forbidden``: why not, or None), and what its
    refusal adds after the kind of address ("which WEBHOOKS_ALLOW_PRIVATE_URLS ... would allow")."""

    forbidden: Callable[[str], str | None]
    refusal: str


WEBHOOKS = AddressPolicy(
    forbidden=forbidden_address,
    refusal="which WEBHOOKS_ALLOW_PRIVATE_URLS (off in this process) would allow",
)


class GuardedBackend(httpcore.SyncBackend):
    """Connects only to the addresses its policy allows (by default the webhooks': public ones): resolves
    the host, checks each address, connects to the first allowed one (by address, so that a second
    lookup cannot answer differently)."""

    def __init__(self, policy: AddressPolicy = WEBHOOKS):
        self.policy = policy

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as error:
            raise httpcore.ConnectError(f"{host} does not resolve ({error})") from None
        refused = None
        last_error = None
        for _family, _, _, _, sockaddr in infos:
            address = sockaddr[0]
            if problem := self.policy.forbidden(address.split("%")[0]):
                if _literal_address(host) is None:
                    # A name: what it resolves to inside the network is not the Integrator's to learn.
                    problem = problem.rpartition(", ")[2].rstrip(")")
                refused = refused or f"refused: {host} resolves to {problem}, {self.policy.refusal}"
                continue
            try:
                return DeadlineStream(
                    super().connect_tcp(
                        address, port, bounded(timeout, httpcore.ConnectTimeout), local_address, socket_options
                    )
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last_error = error
        if last_error is not None:
            raise last_error
        raise httpcore.ConnectError(refused or f"{host} has no address")

"""Where storage nodes may be: public addresses, and the networks the operator lists in
NODE_ALLOWED_NETWORKS (docs/nodes.md, "Where nodes may be").

The purge sends each node a DELETE with a signed bearer token: a node at 127.0.0.1, at the cloud's
metadata address or on an internal service would have the back-office send its requests there
(SSRF). The check is the webhooks' guard (platform_events/webhooks/addresses.py) with the nodes' own
allowed networks: a node's URL is checked when it is saved (``node_host_problem``, the services'
node_url_problem) and the address the purge connects to at every connection (``policy``, through the
guarded transport). Storage nodes often live on a private network, so the networks allowed are the
operator's, read from the environment: staff in the admin cannot widen them.
"""

import ipaddress

import httpx
from django.conf import settings

from platform_events.webhooks.addresses import AddressPolicy, address_problem, host_problem

SETTING = "NODE_ALLOWED_NETWORKS"


def allowed_networks() -> str:
    """What the setting allows, in words: "public addresses" or "public addresses and 10.0.0.0/8"."""
    networks = settings.NODE_ALLOWED_NETWORKS
    return "public addresses" + (f" and {', '.join(map(str, networks))}" if networks else "")


def forbidden_node_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address | str) -> str | None:
    """What kind of address ``ip`` is when a storage node may not be there, None when it may."""
    return address_problem(ip, settings.NODE_ALLOWED_NETWORKS)


def node_host_problem(url: str, *, what: str = "node") -> str | None:
    """Why the purge may not send requests to ``url``'s host, in one sentence; None when it may."""
    try:
        parsed = httpx.URL(url)  # the host and port the purge's requests go to
    except (httpx.InvalidURL, UnicodeError, ValueError):
        return (
            f"nodes: {what} {url!r} cannot be requested: its host is not a valid name or address, or its port a number"
        )
    if not parsed.host:
        return f"nodes: {what} {url!r} names no host"
    if problem := host_problem(parsed.host, forbidden_node_address):
        return (
            f"nodes: {what} {url!r} names {problem}, and storage nodes may be on {allowed_networks()} only"
            f" ({SETTING}, set in the environment, lists the networks allowed besides public addresses)"
        )
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        return f"nodes: {what} {url!r} cannot be requested: its port must be a number from 1 to 65535"
    if parsed.userinfo:
        # Kept in the nodes table and shown on the node's pages and in the trail; the purge's requests
        # carry a token of their own.
        return f"nodes: {what} {url!r} is not valid: a node's URL holds no user name or password"
    return None


def policy() -> AddressPolicy:
    """The guarded transport's policy for the purge's connections, as the setting is now."""
    return AddressPolicy(
        forbidden=forbidden_node_address,
        refusal=f"and storage nodes may be on {allowed_networks()} only ({SETTING})",
    )

"""Where storage nodes may be (accounts/nodes/addresses.py): public addresses, and the networks the
operator lists in NODE_ALLOWED_NETWORKS. A node or a pattern elsewhere is refused when it is saved
(the services, the admin's forms, the commands), and the purge connects to no address outside them,
whatever a node's name resolves to when it connects."""

import io
import ipaddress
import socket
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from accounts.nodes import services
from accounts.nodes.errors import InvalidValue
from accounts.nodes.models import Node, Service
from accounts.nodes.purge import purge_old_records
from accounts.nodes.selectors import assignment_records
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import SERVICE
from tests.accounts.nodes.storage_node import LOOPBACK, StorageNode
from tests.support import staff_client

pytestmark = pytest.mark.django_db

NODE_SECRET = "SECRET"
# A node's URL spelt every way found to reach this machine or the cloud's metadata service.
INSIDE = {
    "http://127.0.0.1:8243": "127.0.0.1, a loopback address",
    "http://169.254.169.254": "169.254.169.254, a link-local (or cloud metadata) address",
    "http://[::1]:8243": "::1, a loopback address",
    "http://0x7f.1:8243": "127.0.0.1, a loopback address",
    "http://localhost:8243": "this machine, localhost",
    "http://2130706433:8243": "127.0.0.1, a loopback address",
    "http://[::ffff:127.0.0.1]:8243": "::ffff:7f00:1 (127.0.0.1, a loopback address)",
    "http://10.1.2.3": "10.1.2.3, a private address",
    "http://user@127.0.0.1:8243": "127.0.0.1, a loopback address",
}
# Patterns whose requests would not go to the node: the bearer token with them.
ELSEWHERE = [
    "http://127.0.0.1:8243/internal/{uid}?from={node}",
    "{node}.attacker.example/{uid}",
    "{node}@127.0.0.1/{uid}",
    "{node}:8243/{uid}",
    "{node}{uid}",
    "x{node}/1.5/{uid}",
]


@pytest.fixture
def service(db):
    return services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")


def refusal(url: str, problem: str) -> str:
    return (
        f"nodes: node {url!r} names {problem}, and storage nodes may be on public addresses only"
        " (NODE_ALLOWED_NETWORKS, set in the environment, lists the networks allowed besides public addresses)"
    )


# When a node or a pattern is saved


@pytest.mark.parametrize(("url", "problem"), INSIDE.items())
def test_a_node_inside_is_refused_with_one_sentence_and_not_added(service, url, problem):
    with pytest.raises(InvalidValue) as refused:
        services.node_add(service=SERVICE, node=url, capacity=10, actor=None)
    assert str(refused.value) == refusal(url, problem)
    assert not Node.objects.exists()


@pytest.mark.parametrize("url", ["https://sync-1.example.com", "http://93.184.215.14:8000", "https://[2606:4700::1]"])
def test_a_node_on_a_public_address_or_name_is_added(service, url):
    services.node_add(service=SERVICE, node=url, capacity=10, actor=None)
    assert Node.objects.get().node == url


def test_the_networks_allowed_are_the_operators_and_only_those(service, settings):
    """With loopback allowed, a node there is added, by address or as localhost; ::1 is not in 127.0.0.0/8,
    and the metadata address and private networks stay refused."""
    settings.NODE_ALLOWED_NETWORKS = (LOOPBACK,)
    for url in ("http://127.0.0.1:8243", "http://0x7f.1:8244", "http://localhost:8243"):
        services.node_add(service=SERVICE, node=url, capacity=10, actor=None)
    for url in ("http://[::1]:8243", "http://169.254.169.254", "http://10.1.2.3"):
        with pytest.raises(InvalidValue, match="storage nodes may be on public addresses and 127.0.0.0/8 only"):
            services.node_add(service=SERVICE, node=url, capacity=10, actor=None)
    settings.NODE_ALLOWED_NETWORKS = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8"))
    services.node_add(service=SERVICE, node="http://10.1.2.3", capacity=10, actor=None)
    services.node_add(service=SERVICE, node="http://[fd00::5]:8000", capacity=10, actor=None)
    assert Node.objects.count() == 5


@pytest.mark.parametrize("pattern", ELSEWHERE)
def test_a_pattern_must_keep_the_node_as_its_origin(db, pattern):
    with pytest.raises(InvalidValue) as refused:
        services.service_add(service=SERVICE, pattern=pattern, actor=None)
    assert str(refused.value) == (
        f"nodes: pattern {pattern!r} is not valid: it must start with {{node}} and go on with a path ('/')"
        " or a query ('?'), so that its requests go to the node's own host and port"
    )
    assert not Service.objects.exists()


@pytest.mark.parametrize("pattern", ["{node}/1.5/{uid}", "{node}?uid={uid}", "{node}/{service}/{uid}"])
def test_a_pattern_going_on_from_the_node_is_added(db, pattern):
    services.service_add(service=SERVICE, pattern=pattern, actor=None)
    assert Service.objects.get().pattern == pattern


def test_the_admin_refuses_a_node_or_a_pattern_inside_beside_its_field(service):
    integrator = staff_client("Integrator", "integrator1")
    rows_before = AuditEvent.objects.count()  # the service's own service.added, and the login's
    form = {"service": service.pk, "node": "http://169.254.169.254", "capacity": 10, "available": ""}
    response = integrator.post("/admin/accounts/node/add/", form)
    assert response.context["adminform"].form.errors == {
        "node": [refusal("http://169.254.169.254", INSIDE["http://169.254.169.254"])]
    }
    pattern = ELSEWHERE[0]
    response = integrator.post("/admin/accounts/service/add/", {"service": "sync-2", "pattern": pattern})
    assert response.context["adminform"].form.errors == {"pattern": [services.pattern_problem(pattern)]}
    assert not Node.objects.exists() and list(Service.objects.values_list("service", flat=True)) == [SERVICE]
    assert AuditEvent.objects.count() == rows_before


def test_the_commands_refuse_a_node_or_a_pattern_inside_with_one_sentence(service):
    with pytest.raises(CommandError) as refused:
        call_command("add_node", SERVICE, "http://[::1]:8243", "10", stdout=io.StringIO())
    assert str(refused.value) == refusal("http://[::1]:8243", INSIDE["http://[::1]:8243"])
    with pytest.raises(CommandError, match="it must start with \\{node\\}"):
        call_command("add_service", "sync-2", "--pattern", ELSEWHERE[0], stdout=io.StringIO())
    assert not Node.objects.exists()


# When the purge connects


@pytest.fixture
def storage_node(settings):
    settings.NODE_SECRET = NODE_SECRET
    with StorageNode(secret=NODE_SECRET) as node:
        yield node


def replaced_row_on(node_url: str) -> AccountFactory:
    """An account whose replaced assignment on ``node_url`` is past any grace period."""
    account = AccountFactory()
    services.assignment_allocate(service=SERVICE, account_id=account.pk, node=node_url, client_state="aa")
    services.assignments_replace(service=SERVICE, account_id=account.pk)
    return account


def purge():
    return purge_old_records(service=SERVICE, node_secret=NODE_SECRET, grace_period=timedelta(0))


def resolving(monkeypatch, name: str, address: str):
    """``name`` resolves to ``address`` (as a DNS answer changed since the node was added would)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == name:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_name_resolving_inside_when_the_purge_connects_is_refused_then_reached_once_allowed(
    service, storage_node, settings, monkeypatch
):
    """A node added under a public name that resolves to 127.0.0.1 when the purge connects: no request
    reaches the node on loopback, the row stays (counted as ``address``), until the operator allows
    loopback; then the DELETE is sent and the row goes."""
    port = int(storage_node.url.rpartition(":")[2])
    url = f"http://storage.example.com:{port}"
    services.node_add(service=SERVICE, node=url, capacity=10, actor=None)
    account = replaced_row_on(url)
    (uid,) = [row.uid for row in assignment_records(service=SERVICE, account_id=account.pk)]
    resolving(monkeypatch, "storage.example.com", "127.0.0.1")

    counts = purge()
    assert (counts.deleted, dict(counts.failures)) == (0, {"address": 1})
    assert storage_node.requests == []
    assert len(assignment_records(service=SERVICE, account_id=account.pk)) == 1

    settings.NODE_ALLOWED_NETWORKS = (LOOPBACK,)
    counts = purge()
    assert (counts.deleted, counts.nodes_told, dict(counts.failures)) == (1, 1, {})
    assert [(request.method, request.path, request.claims["uid"]) for request in storage_node.requests] == [
        ("DELETE", f"/1.5/{uid}", uid)
    ]
    assert assignment_records(service=SERVICE, account_id=account.pk) == []


def test_a_node_added_on_loopback_is_refused_once_the_operator_no_longer_allows_it(service, storage_node, settings):
    """The check on connecting reads the setting as it is now: a node added while loopback was allowed
    gets no request after the operator removed it from NODE_ALLOWED_NETWORKS."""
    settings.NODE_ALLOWED_NETWORKS = (LOOPBACK,)
    services.node_add(service=SERVICE, node=storage_node.url, capacity=10, actor=None)
    account = replaced_row_on(storage_node.url)
    settings.NODE_ALLOWED_NETWORKS = ()
    counts = purge()
    assert dict(counts.failures) == {"address": 1}
    assert storage_node.requests == []
    assert len(assignment_records(service=SERVICE, account_id=account.pk)) == 1


def test_the_override_node_is_checked_as_a_node_is(service, storage_node):
    with pytest.raises(CommandError) as refused:
        call_command(
            "purge_old_records", "--grace-period", "0", "--force", "--override-node", "http://169.254.169.254",
            stdout=io.StringIO(),
        )  # fmt: skip
    assert str(refused.value) == refusal("http://169.254.169.254", INSIDE["http://169.254.169.254"]).replace(
        "nodes: node", "nodes: override node"
    )


def test_a_pattern_saved_before_the_rule_stops_the_purge_before_any_request(service, storage_node, settings):
    """A pattern the database still holds from before the rule sends nothing anywhere."""
    settings.NODE_ALLOWED_NETWORKS = (LOOPBACK,)
    services.node_add(service=SERVICE, node=storage_node.url, capacity=10, actor=None)
    account = replaced_row_on(storage_node.url)
    pattern = f"{storage_node.url}/internal/{{uid}}?from={{node}}"
    Service.objects.filter(service=SERVICE).update(pattern=pattern)
    with pytest.raises(CommandError, match="it must start with \\{node\\}.*; the purge did nothing"):
        call_command("purge_old_records", "--grace-period", "0", stdout=io.StringIO())
    assert storage_node.requests == []
    assert len(assignment_records(service=SERVICE, account_id=account.pk)) == 1

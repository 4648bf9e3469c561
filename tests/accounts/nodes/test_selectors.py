"""Reads of node assignment (accounts/nodes/selectors.py): names to ids, and a read side that does not
depend on the write side."""

import grimp
import pytest

from accounts.nodes.errors import UnknownName
from accounts.nodes.models import Node, Service
from accounts.nodes.selectors import node_id, service_id
from tests.accounts.nodes.conftest import NODE_URL, SERVICE

pytestmark = pytest.mark.django_db


def test_a_service_is_found_by_its_name(nodes):
    assert service_id(SERVICE) == Service.objects.get(service=SERVICE).pk


@pytest.mark.parametrize("name", ["mail", "Sync-1.5", "sync-1.5\x00", "sync-1.5\udcff", "s" * 10_000])
def test_a_name_no_service_has_is_unknown(nodes, name):
    """Also a name no row could hold (a NUL, undecodable bytes, too long): refused as unknown, not a
    database error."""
    with pytest.raises(UnknownName, match="nodes: unknown service"):
        service_id(name)


def test_a_node_is_found_by_its_service_and_url(nodes):
    assert node_id(service=SERVICE, node=NODE_URL) == Node.objects.get(node=NODE_URL).pk


@pytest.mark.parametrize("url", ["https://phx13", "https://phx12/", "https://phx12\x00", "https://" + "x" * 100])
def test_a_url_the_service_has_no_node_at_is_unknown(nodes, url):
    with pytest.raises(UnknownName, match="nodes: unknown node"):
        node_id(service=SERVICE, node=url)


def test_the_node_of_an_unknown_service_is_unknown(nodes):
    with pytest.raises(UnknownName, match="nodes: unknown service 'mail'"):
        node_id(service="mail", node=NODE_URL)


def test_the_selectors_do_not_import_the_services():
    """Reads depend on the models only: the services (the write side) import the selectors, never
    the other way round."""
    graph = grimp.build_graph("accounts", "platform_events", cache_dir=None)
    assert not graph.chain_exists(importer="accounts.nodes.selectors", imported="accounts.nodes.services")

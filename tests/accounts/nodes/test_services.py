"""The node rules' checks (accounts/nodes/services.py): one per rule of accounts/sql/0014_nodes.sql,
each refusing exactly what the database refuses, in a sentence, and applied by the services
themselves before the database is asked."""

import ipaddress

import pytest
from django.db import DatabaseError, connection, transaction

from accounts.nodes.errors import InvalidValue
from accounts.nodes.models import INT_MAX, Node, Service
from accounts.nodes.services import (
    node_add,
    node_number_problem,
    node_update,
    node_url_problem,
    pattern_problem,
    service_add,
    service_name_problem,
)
from tests.accounts.nodes.conftest import NODE_URL, SERVICE

pytestmark = pytest.mark.django_db


def stored(statement: str, params: list) -> bool:
    """Whether the database takes the row (in a savepoint, rolled back with the test)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement, params)
    except DatabaseError:
        return False
    return True


SERVICE_NAMES = [
    "sync-1.5",
    "a",
    "0.x_y-z",
    "s" * 30,
    "s" * 31,  # one past the column: one sentence for it, whether the admin's form or the API asks
    "Sync",
    "-sync",
    ".sync",
    "sync 1.5",
    "sync\n",
    "ſync",
    "",
]


@pytest.mark.parametrize("name", SERVICE_NAMES)
def test_the_service_name_check_refuses_exactly_what_the_database_refuses(name):
    accepted = stored("INSERT INTO services (service) VALUES (%s)", [name])
    assert (service_name_problem(name) is None) == accepted


NODE_URLS = [
    "https://phx13",
    "http://10.0.0.1:8000",
    "https://phx13/storage/v1",
    "https://" + "x" * 56,  # 64 characters
    "https://" + "x" * 57,
    "https://phx13/",
    "https://phx13/storage/",
    "ftp://phx13",
    "phx13",
    "https://",
    "https:///storage",
    "https://phx 13",
    "https://phx13?x=1",
    "https://phx13#top",
    "https://phx13\n",
]


@pytest.mark.parametrize("url", NODE_URLS)
def test_the_node_url_check_refuses_exactly_what_the_database_refuses(nodes, url, settings):
    """The URL's shape; where a node may be is the operator's setting, beside (tests/accounts/nodes/test_addresses.py)."""
    settings.NODE_ALLOWED_NETWORKS = (ipaddress.ip_network("10.0.0.0/8"),)
    service = Service.objects.get(service=SERVICE)
    accepted = stored("INSERT INTO nodes (service, node, capacity) VALUES (%s, %s, 1)", [service.pk, url])
    assert (node_url_problem(url) is None) == accepted


@pytest.mark.parametrize(
    "pattern",
    [None, "{node}/1.5/{uid}", "{node}", "/1.5/{uid}", "{nod}e", "{node}/" + "x" * 121, "{node}/" + "x" * 122],
)
def test_the_pattern_check_refuses_exactly_what_the_database_refuses(pattern):
    accepted = stored("INSERT INTO services (service, pattern) VALUES ('sync-2', %s)", [pattern])
    assert (pattern_problem(pattern) is None) == accepted


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("capacity", 1),
        ("capacity", 0),
        ("capacity", -1),
        ("capacity", INT_MAX),
        ("capacity", INT_MAX + 1),
        ("available", 0),
        ("available", -1),
        ("available", INT_MAX + 1),
        ("current_load", 0),
        ("current_load", -1),
        ("current_load", INT_MAX + 1),
    ],
)
def test_the_node_number_check_refuses_exactly_what_the_database_refuses(nodes, name, value):
    service = Service.objects.get(service=SERVICE)
    numbers = {"capacity": 10, name: value}
    columns, values = ", ".join(numbers), ", ".join(["%s"] * len(numbers))
    accepted = stored(
        f"INSERT INTO nodes (service, node, {columns}) VALUES (%s, 'https://phx13', {values})",
        [service.pk, *numbers.values()],
    )
    assert (node_number_problem(name, value) is None) == accepted


def test_adding_a_service_applies_the_name_and_pattern_checks():
    with pytest.raises(InvalidValue) as refused:
        service_add(service="Sync", actor=None)
    assert str(refused.value) == service_name_problem("Sync")
    with pytest.raises(InvalidValue) as refused:
        service_add(service="sync", pattern="/1.5/{uid}", actor=None)
    assert str(refused.value) == pattern_problem("/1.5/{uid}")
    assert not Service.objects.exists()


def test_adding_a_node_applies_the_url_and_number_checks(nodes):
    with pytest.raises(InvalidValue) as refused:
        node_add(service=SERVICE, node="https://phx13/", capacity=10, actor=None)
    assert str(refused.value) == node_url_problem("https://phx13/")
    with pytest.raises(InvalidValue) as refused:
        node_add(service=SERVICE, node="https://phx13", capacity=0, actor=None)
    assert str(refused.value) == node_number_problem("capacity", 0)
    assert list(Node.objects.values_list("node", flat=True)) == [NODE_URL]


def test_changing_a_node_applies_the_number_checks(nodes):
    with pytest.raises(InvalidValue) as refused:
        node_update(service=SERVICE, node=NODE_URL, current_load=-1, actor=None)
    assert str(refused.value) == node_number_problem("current_load", -1)
    assert Node.objects.get().current_load == 0


def test_a_refusal_names_the_value_and_says_the_rule():
    assert service_name_problem("Sync") == (
        "nodes: service name 'Sync' is not valid: a service's name starts with a lower-case letter or digit,"
        " then up to 29 more of a-z, 0-9, '.', '_' and '-'"
    )
    assert node_url_problem("phx13", what="override node").endswith("; override node 'phx13' is not valid")

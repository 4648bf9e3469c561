"""While the database cannot be reached, pages answer a clear 503, never a traceback."""

from contextlib import contextmanager

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client

from platform_events.db.unreachable import database_unreachable

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def database_down():
    """The app's connections point at a socket directory with no server in it, as during a restart:
    each connection attempt really fails (nothing is mocked)."""
    host = connection.settings_dict["HOST"]
    connection.close()
    connection.settings_dict["HOST"] = "/nonexistent/no-server-here"
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["HOST"] = host


@pytest.mark.parametrize(
    ("method", "path", "data"),  # each reads or writes the database; their GETs need none
    [
        ("post", "/recover/", {"identifier": "someone@example.com"}),
        ("post", "/activate/" + "A" * 43, {"confirm": "1"}),
        ("post", "/admin/login/", {"username": "admin", "password": "x"}),
    ],
)
def test_a_page_that_needs_the_database_says_to_come_back(method, path, data):
    client = Client(raise_request_exception=False)
    with database_down():
        response = getattr(client, method)(path, data)
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    page = response.content.decode()
    assert "Back in a moment" in page and "Nothing was changed" in page
    assert "Traceback" not in page


@pytest.mark.parametrize(
    "statement",
    ["SELECT 1/0", "SET LOCAL statement_timeout = '1ms'; SELECT pg_sleep(1)"],
    ids=["a failed query", "a cancelled query (an OperationalError with a SQLSTATE)"],
)
def test_a_failing_query_is_no_unreachable_database(statement):
    """Only an unreachable database is a 503: a bug is still a 500."""
    with pytest.raises(DatabaseError) as caught, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)
    assert not database_unreachable(caught.value)
    with database_down(), pytest.raises(DatabaseError) as caught:
        connection.ensure_connection()
    assert database_unreachable(caught.value)


def test_the_client_api_answers_503_unavailable_with_retry_after():
    """As the pages do: an unreachable database is no server error (not a 500 server-error)."""
    from platform_events.api.clients import api_client_create

    _, api_key = api_client_create(name="reader", scopes=["accounts:read"], actor=None)
    client = Client(raise_request_exception=False)
    with database_down():
        response = client.get("/api/v1/accounts?login=jane", headers={"Authorization": f"Bearer {api_key}"})
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"].endswith("/problems/unavailable")

"""runserver closes each request's database connections when the request ends, persistent
connections (CONN_MAX_AGE) or not: its thread per request would otherwise leave them open."""

import httpx
import pytest
from django.core.management import load_command_class

from tests.support import Server, connect, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# A link with no token behind it: the page looks the token up (so each request opens a connection), then
# answers 404.
UNKNOWN_LINK = "/activate/" + "A" * 43


def sessions() -> int:
    with connect(autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]


def test_no_connection_outlives_its_request_with_persistent_connections():
    server = Server(CONN_MAX_AGE="60")
    try:
        before = sessions()
        for _ in range(12):
            assert httpx.get(server.url + UNKNOWN_LINK, timeout=30).status_code == 404
        # The last request's connection closes just after its answer is sent.
        wait_for(lambda: sessions() <= before, timeout=10, message="the server's connections to close")
    finally:
        server.stop()


def test_it_is_staticfiles_runserver_with_its_options():
    parser = load_command_class("lifecycle", "runserver").create_parser("manage.py", "runserver")
    assert {"--nostatic", "--insecure", "--noreload"} <= set(parser._option_string_actions)

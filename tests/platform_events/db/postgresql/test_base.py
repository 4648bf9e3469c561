import select
import time

import pytest
from django.core.signals import request_started
from django.db import connection

from platform_events.db.postgresql import base
from tests.support import connect

pytestmark = pytest.mark.django_db(transaction=True)


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _tries(monkeypatch) -> list[None]:
    """Each of Django's own health checks (its SELECT 1) made from now on."""
    made = []
    usable = connection.is_usable

    def counted():
        made.append(None)
        return usable()

    monkeypatch.setattr(connection, "is_usable", counted)
    return made


def test_a_kept_connection_with_nothing_to_read_is_reused_without_a_round_trip(monkeypatch):
    """A request that reuses a kept connection checked moments ago, which the server has said nothing on
    since, sends no SELECT 1 before its own statement, and uses the same session."""
    pid = _backend_pid()
    tries = _tries(monkeypatch)
    request_started.send(sender=None)
    assert _backend_pid() == pid
    assert tries == [None]  # never checked before: Django's check
    for _ in range(3):
        request_started.send(sender=None)
        assert _backend_pid() == pid
    assert tries == [None]


def test_a_connection_quiet_for_longer_than_quiet_seconds_is_asked(monkeypatch):
    """Silence proves less the longer it lasts (a host gone, a floating address moved): a connection not
    checked for QUIET_SECONDS gets Django's SELECT 1, quiet socket or not."""
    _backend_pid()
    request_started.send(sender=None)
    _backend_pid()
    tries = _tries(monkeypatch)
    monkeypatch.setattr(connection, "checked_at", time.monotonic() - base.QUIET_SECONDS - 1)
    request_started.send(sender=None)
    _backend_pid()
    assert tries == [None]


def test_a_connection_left_inside_a_transaction_is_asked(monkeypatch):
    """A kept connection that is not idle outside a transaction (a statement still running, a transaction
    left open) is never taken as alive on silence alone."""
    _backend_pid()
    request_started.send(sender=None)
    _backend_pid()
    connection.connection.execute("BEGIN")
    try:
        tries = _tries(monkeypatch)
        request_started.send(sender=None)
        _backend_pid()
        assert tries == [None]
    finally:
        connection.connection.execute("ROLLBACK")


def test_a_kept_connection_the_server_ended_is_replaced_before_the_request_uses_it(monkeypatch):
    """A session the server terminated while it sat idle (as a restart does) is tried, found dead and
    replaced: the request's first statement runs on a new session, without an error."""
    pid = _backend_pid()
    with connect(autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 10
    while not select.select([connection.connection.fileno()], [], [], 0.1)[0]:  # the FATAL message, then EOF
        assert time.monotonic() < deadline, "the terminated session said nothing on its socket"
    tries = _tries(monkeypatch)
    request_started.send(sender=None)
    assert _backend_pid() != pid
    assert tries == [None]


def test_a_kept_connection_closed_on_the_client_side_is_replaced(monkeypatch):
    """A session whose socket is gone from under Django (closed by psycopg, say) has nothing to poll:
    Django's own check decides, and the request gets a new session."""
    pid = _backend_pid()
    connection.connection.close()
    request_started.send(sender=None)
    assert _backend_pid() != pid

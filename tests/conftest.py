import threading
import time

import psycopg
import pytest
from django.db import DatabaseError, connection, connections, transaction

from platform_events.db.direct_connection import direct_connection

# Unmanaged tables are not flushed by Django after transactional tests: empty them ourselves.
LIFECYCLE_TABLES = ["tokens", "accounts", "jobs"]


@pytest.fixture(autouse=True)
def _empty_lifecycle_tables_after_transactional_tests(request):
    yield
    marker = request.node.get_closest_marker("django_db")
    if marker and marker.kwargs.get("transaction"):
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {', '.join(LIFECYCLE_TABLES)} RESTART IDENTITY CASCADE")


def connect(**kwargs) -> psycopg.Connection:
    """A connection of our own to the test database, as a second psql session would be."""
    return direct_connection(**kwargs)


@pytest.fixture
def psql():
    """An autocommit connection, like a person typing in psql. Used by transactional tests."""
    with connect(autocommit=True) as conn:
        yield conn


@pytest.fixture
def sql(db):
    """Run raw SQL on the test's own connection and return the rows (inside the test's transaction)."""

    def run(statement: str, params=None):
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            return cursor.fetchall() if cursor.description else cursor.rowcount

    return run


@pytest.fixture
def refused(sql):
    """Assert that the database refuses a statement with a message matching ``match``; the data stays as it was."""

    def check(statement: str, params=None, *, match: str):
        with pytest.raises(DatabaseError, match=match):
            with transaction.atomic():
                sql(statement, params)

    return check


def wait_until_blocked(conn: psycopg.Connection, count: int, timeout: float = 10.0) -> None:
    """Wait until ``count`` sessions of the test database wait on a lock (so the race really overlaps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Activity statistics are a snapshot per transaction: take a fresh one each time.
        conn.execute("SELECT pg_stat_clear_snapshot()")
        (blocked,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
        if blocked >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {count} sessions waiting on a lock, saw {blocked}")


def in_threads(*calls):
    """Run each call in its own thread (each with its own database connection); return (ok, value) per call."""
    results = [None] * len(calls)

    def work(index, call):
        try:
            results[index] = (True, call())
        except Exception as error:  # the test inspects it
            results[index] = (False, error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    return threads, results

"""Statements that give up instead of waiting: for readers that must answer in time (a probe, a scrape)."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def bounded_statements(timeout: str) -> Iterator[None]:
    """A transaction whose every statement is cancelled after ``timeout`` (PostgreSQL's interval text,
    e.g. "2s"): SET LOCAL, so the connection's own setting is back once it ends."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [timeout])
        yield

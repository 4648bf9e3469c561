"""A statement sent on Django's connection without waiting for its answer (platform_events/db/unawaited.py)."""

import uuid

import pytest
from django.db import connection

from platform_events.db.unawaited import UnawaitedStatement

pytestmark = pytest.mark.django_db


def test_collect_rows_gives_the_rows_typed_as_a_cursors_are():
    """The answer to a statement that returns rows is read as the rows a cursor would give: a uuid as a
    UUID, an int as an int, text as str; None when no answer is due."""
    statement = UnawaitedStatement()
    assert statement.collect_rows() is None
    made = uuid.uuid4()
    statement.send("SELECT $1::uuid, n, 'row ' || n FROM generate_series(1, $2::int) n", [str(made), "2"])
    assert statement.collect_rows() == [(made, 1, "row 1"), (made, 2, "row 2")]
    assert statement.collect_rows() is None
    with connection.cursor() as cursor:  # the connection in step for what runs next
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)

"""Bounded statements: cancelled past their timeout, and the connection's own setting back afterwards."""

import pytest
from django.db import OperationalError, connection

from platform_events.db.timeouts import bounded_statements

pytestmark = pytest.mark.django_db


def setting() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


def test_a_statement_past_the_timeout_is_cancelled():
    with pytest.raises(OperationalError, match="statement timeout"), bounded_statements("50ms"):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(1)")


@pytest.mark.django_db(transaction=True)  # outside any test transaction, as a probe or a scrape runs
def test_the_timeout_holds_inside_only():
    before = setting()
    with bounded_statements("2s"):
        assert setting() == "2s"
    assert setting() == before

"""The audit trail's monthly partitions and the command that makes them ahead."""

import io

import pytest
from django.core.management import CommandError, call_command

from platform_events.audit.partitions import ensure_partitions

pytestmark = pytest.mark.django_db


class TestPartitions:
    # Direct audit rows are the owner's to write (the runtime role writes none: test_runtime_role.py).
    @pytest.mark.django_db(databases=["default", "owner"])
    def test_rows_either_side_of_a_month_boundary_land_in_their_months(self, owner_sql):
        sql = owner_sql
        sql("SELECT audit_ensure_partition('2031-01-01'), audit_ensure_partition('2031-02-01')")
        for moment in ("2031-01-31T23:59:59.999999Z", "2031-02-01T00:00:00Z"):
            sql(
                "INSERT INTO audit_events (occurred_at, actor_type, actor_id, action, resource_type, resource_id)"
                " VALUES (%s, 'SYSTEM', 'test', 'test.boundary', 'test', '1')",
                [moment],
            )
        assert sql(
            "SELECT tableoid::regclass::text FROM audit_events WHERE action = 'test.boundary' ORDER BY occurred_at"
        ) == [
            ("audit_events_2031_01",),
            ("audit_events_2031_02",),
        ]

    @pytest.mark.django_db(databases=["default", "owner"])
    def test_a_row_for_a_month_without_a_partition_lands_in_the_default_one_and_moves_later(self, owner_sql):
        sql = owner_sql
        sql(
            "INSERT INTO audit_events (occurred_at, actor_type, actor_id, action, resource_type, resource_id)"
            " VALUES ('2033-05-17T12:00:00Z', 'SYSTEM', 'test', 'test.future', 'test', '1')"
        )
        where = "SELECT tableoid::regclass::text FROM audit_events WHERE action = 'test.future'"
        assert sql(where) == [("audit_events_default",)]
        sql("SELECT audit_ensure_partition('2033-05-01')")
        assert sql(where) == [("audit_events_2033_05",)]

    def test_the_command_makes_the_months_ahead_and_is_idempotent(self, sql):
        out = io.StringIO()
        call_command("ensure_audit_partitions", "--months-ahead", "2", stdout=out)
        call_command("ensure_audit_partitions", "--months-ahead", "2", stdout=out)
        assert "Every partition already exists." in out.getvalue()
        from datetime import date

        made = ensure_partitions(months_ahead=2, today=date(2035, 11, 3))
        assert made == ["audit_events_2035_11", "audit_events_2035_12", "audit_events_2036_01"]
        assert ensure_partitions(months_ahead=2, today=date(2035, 11, 3)) == []

    def test_the_command_refuses_a_bad_count(self):
        with pytest.raises(CommandError, match="between 0 and 120"):
            call_command("ensure_audit_partitions", "--months-ahead", "-1")


@pytest.mark.django_db(transaction=True)
def test_a_second_run_waits_for_the_first_and_finds_the_months_made():
    """Two runs at once would both make the missing month, and the second would fail: it waits."""
    from datetime import date

    from platform_events.audit.partitions import PARTITIONS_LOCK
    from platform_events.db.locks import lock_key
    from tests.support import connect, connect_as_owner, in_threads, wait_until_blocked

    with connect_as_owner() as first, connect() as watcher:
        # The first run, midway: it holds the lock and has made the month, not yet committed.
        first.execute("SELECT pg_advisory_lock(%s)", [lock_key(PARTITIONS_LOCK)])
        first.execute("SELECT audit_ensure_partition('2041-03-01')")
        threads, results = in_threads(lambda: ensure_partitions(months_ahead=0, today=date(2041, 3, 9)))
        wait_until_blocked(watcher, 1)
        first.commit()
        first.execute("SELECT pg_advisory_unlock(%s)", [lock_key(PARTITIONS_LOCK)])
        for thread in threads:
            thread.join(30)
    assert results == [(True, [])]

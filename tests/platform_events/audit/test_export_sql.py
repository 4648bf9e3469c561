"""platform_events/sql/0009_audit_export.sql: the one audit row the app writes itself (an export of the
trail, through a function that fixes what it writes), and the indexes that find a deleted account by
its login or e-mail."""

import pytest
from django.db import DatabaseError, connection, transaction

from lifecycle.audit_trail.selectors import accounts_named
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


class Staff:
    pk, audit_kind = 3, "staff"

    def get_username(self):
        return "auditor1"


def test_the_runtime_role_records_an_export_as_the_acting_staff_member(sql):
    with transaction.atomic(), audit_context(actor=Staff(), reason=None):
        sql("SELECT audit_record_export('audit-trail-1.csv', 'account=7', 12, now())")
    event = AuditEvent.objects.get(action="audit.exported")
    assert (event.actor_id, event.actor_display, event.db_user) == ("staff:3", "auditor1", "lifecycle_app")
    assert (event.resource_type, event.resource_id) == ("audit_trail", "audit-trail-1.csv")
    assert event.diff_before is None and {key: event.diff_after[key] for key in ("query", "rows")} == {
        "query": "account=7",
        "rows": 12,
    }


@pytest.mark.parametrize(
    ("arguments", "refusal"),
    [
        ("'../etc/passwd', '', 1, now()", "an export's file name is 1 to 64"),
        ("'', '', 1, now()", "an export's file name is 1 to 64"),
        ("repeat('a', 65), '', 1, now()", "an export's file name is 1 to 64"),
        ("NULL, '', 1, now()", "an export's file name is 1 to 64"),
        ("'a.csv', '', -1, now()", "an export names how many rows it holds"),
        ("'a.csv', '', NULL, now()", "an export names how many rows it holds"),
        ("'a.csv', '', 1, NULL", "an export names how many rows it holds"),
    ],
)
def test_a_malformed_export_is_refused_and_writes_nothing(refused, arguments, refusal):
    refused(f"SELECT audit_record_export({arguments})", match=f"platform_events: {refusal}")
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def test_a_deleted_accounts_login_is_found_through_its_index(sql):
    """Search by login reads the partial index on account.deleted rows, not every row of the trail.
    Two hundred other deleted accounts fill both indexes, as a real trail would: with one row each, the
    e-mail index read whole costs the planner what the login index does."""
    sql(
        "INSERT INTO accounts (email, login) SELECT 'deleted' || g || '@example.com', 'deleted' || g"
        " FROM generate_series(1, 200) g"
    )
    sql("DELETE FROM accounts WHERE login LIKE 'deleted%'")
    sql("INSERT INTO accounts (email, login) VALUES ('gone@example.com', 'Gone')")
    sql("DELETE FROM accounts WHERE login = 'Gone'")
    assert len(accounts_named("gone")) == 1 and accounts_named("GONE@example.com") == accounts_named("gone")
    for key in ("login", "email"):
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(
                "EXPLAIN SELECT resource_id FROM audit_events"
                f" WHERE action = 'account.deleted' AND lower(diff_before ->> '{key}') = lower('gone')"
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
        # The partitions name their copies of the index by its expression ("..._lower_idx").
        assert f"Index Cond: (lower((diff_before ->> '{key}'::text))" in plan and "Seq Scan" not in plan, plan


def test_the_runtime_role_still_cannot_write_any_other_row(refused):
    refused("SELECT audit_record('audit.exported', 'audit_trail', 'x', NULL, NULL)", match="permission denied")
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO audit_events (actor_type, actor_id, action, resource_type, resource_id)"
                " VALUES ('USER', 'staff:1', 'audit.exported', 'audit_trail', 'forged.csv')"
            )

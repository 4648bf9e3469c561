"""The runtime role (what the web server, the worker and the commands connect as) cannot rewrite the
audit trail, nor lift the rules that guard it: each statement of the attack, tried on a real
connection of that role."""

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from platform_events.db.runtime_role import grant_runtime_privileges
from tests.support import connect, connect_as_owner

pytestmark = pytest.mark.django_db(transaction=True)

# Each is refused with SQLSTATE 42501 (insufficient_privilege). The message depends on the statement
# and on the server's version ("permission denied for table ...", "must be owner of table ...";
# "must be superuser to alter superuser roles ..." on PostgreSQL 15, "permission denied to alter
# role" on 16 and newer), so the tests hold the code, not the wording.
FORBIDDEN = [
    "TRUNCATE audit_events",
    "TRUNCATE audit_events_default",  # the TRUNCATE trigger is not on partitions
    "DELETE FROM audit_events",
    "UPDATE audit_events SET reason = 'rewritten'",
    "DELETE FROM audit_events_default",
    "INSERT INTO audit_events (actor_type, actor_id, action, resource_type, resource_id)"
    " VALUES ('USER', '1', 'account.suspended', 'account', '1')",
    "INSERT INTO audit_events_default (actor_type, actor_id, action, resource_type, resource_id)"
    " VALUES ('USER', '1', 'account.suspended', 'account', '1')",
    "SELECT audit_record('account.suspended', 'account', '1', NULL, NULL)",
    "SELECT audit_record_many('account.suspended', 'account', ARRAY['1'], NULL, NULL)",
    "SET session_replication_role = replica",
    "ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only",
    "ALTER TABLE audit_events_default DISABLE TRIGGER ALL",
    "ALTER TABLE accounts DISABLE TRIGGER before_account_validate",
    "ALTER TABLE audit_events DETACH PARTITION audit_events_default",
    "DROP TABLE audit_events_default",
    "DROP TABLE audit_events",
    "ALTER FUNCTION audit_ensure_partition(date) SECURITY INVOKER",
    # No CREATE on the schema, nor owner of the function.
    "CREATE OR REPLACE FUNCTION tokens_max_code_attempts() RETURNS smallint LANGUAGE sql AS 'SELECT 99::smallint'",
    "CREATE TABLE forged (id int)",
    "CREATE FUNCTION forged() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "COPY accounts FROM PROGRAM 'id'",
    "DELETE FROM django_migrations",
    "ALTER ROLE CURRENT_USER SUPERUSER",
    "GRANT lifecycle_owner TO CURRENT_USER",
]


@pytest.fixture
def trail():
    """A trail with rows in it, and a way to read all of it as the owner."""
    account_suspend(account=AccountFactory(), actor=None)

    def read():
        with connect_as_owner() as owner:
            return owner.execute("SELECT * FROM audit_events ORDER BY occurred_at, id").fetchall()

    return read


@pytest.mark.parametrize("statement", FORBIDDEN, ids=FORBIDDEN)
def test_the_runtime_role_cannot(trail, statement):
    before = trail()
    with connect() as runtime:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            runtime.execute(statement)
    assert trail() == before


def test_the_runtime_role_is_no_superuser_and_owns_nothing():
    with connect() as runtime:
        superuser, createrole, createdb = runtime.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        owned = runtime.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = current_user::regrole"
            " UNION ALL SELECT count(*) FROM pg_proc WHERE proowner = current_user::regrole"
        ).fetchall()
    assert (superuser, createrole, createdb) == (False, False, False)
    assert owned == [(0,), (0,)]


def test_a_claimed_actor_is_recorded_beside_the_login_role_that_wrote_the_row():
    """Any session can SET LOCAL an actor; the row also says which login role really wrote it."""
    account = AccountFactory()
    with connect() as runtime:
        runtime.execute("SET LOCAL lifecycle.actor_id = '1'")
        runtime.execute("SET LOCAL lifecycle.actor_display = 'admin'")
        runtime.execute("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account.pk])
    event = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
    assert (event.actor_display, event.db_user) == ("admin", "lifecycle_app")


def test_the_runtime_role_makes_a_partition_and_moves_its_rows_through_the_owners_function():
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(
            "INSERT INTO audit_events (occurred_at, actor_type, actor_id, action, resource_type, resource_id)"
            " VALUES ('2034-03-17T12:00:00Z', 'SYSTEM', 'test', 'test.future', 'test', '1')"
        )
    with connect(autocommit=True) as runtime:
        assert runtime.execute("SELECT audit_ensure_partition('2034-03-01')").fetchone() == (True,)
        where = runtime.execute("SELECT tableoid::regclass::text FROM audit_events WHERE action = 'test.future'")
        assert where.fetchall() == [("audit_events_2034_03",)]
    # The new partition gives the runtime role nothing either.
    with connect() as runtime, pytest.raises(psycopg.errors.InsufficientPrivilege):
        runtime.execute("DELETE FROM audit_events_2034_03")


# What migrate refuses to grant to: each a one-sentence configuration error (manage.py prints it as such).


@pytest.mark.django_db(databases=["default", "owner"])
def test_migrate_refuses_a_runtime_role_that_could_create_objects_in_the_schema():
    """PostgreSQL 14 lets every role create in schema public, so a runtime role could plant a table or
    a function there; 15 and newer do not. Given that default back here, migrate's grants refuse it."""
    with connections["owner"].cursor() as cursor:
        cursor.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")  # undone with the test's transaction
    with pytest.raises(ImproperlyConfigured, match="may create objects in schema public") as refusal:
        grant_runtime_privileges(using="owner")
    assert "REVOKE CREATE ON SCHEMA public FROM PUBLIC" in str(refusal.value)


@pytest.mark.django_db(databases=["default", "owner"])
def test_migrate_refuses_a_login_role_outside_the_runtime_role(settings):
    settings.DATABASE_RUNTIME_ROLE = "pg_monitor"  # a role that exists, which the runtime login is not in
    with pytest.raises(ImproperlyConfigured, match="is not a member of the runtime role 'pg_monitor'"):
        grant_runtime_privileges(using="owner")


@pytest.mark.django_db(databases=["default", "owner"])
def test_migrate_refuses_a_runtime_role_that_does_not_exist(settings):
    settings.DATABASE_RUNTIME_ROLE = "no_such_role"
    with pytest.raises(ImproperlyConfigured, match="The runtime role 'no_such_role' does not exist"):
        grant_runtime_privileges(using="owner")

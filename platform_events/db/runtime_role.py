"""What the runtime role may do, granted by the owner after every migrate (docs/security.md, "The database roles").

The runtime role (settings.DATABASE_RUNTIME_ROLE, a group the login roles of the web server, the
worker and the commands belong to) reads and writes the product's tables and nothing more: it owns
nothing, so it cannot alter, disable triggers on, truncate, detach or drop a table. The audit trail
it may only read: its rows are written by trigger functions that run as the owner (SECURITY DEFINER),
and audit_record()/audit_record_many() are not executable by anyone else. Nor may it read the key that
lets a transaction rewrite trigger-kept history (platform_events/db/history.py). The outbox it reads;
its events and their deliveries are queued by the triggers and deleted by retention's function.
"""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

GRANTS = """
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role};
-- Read-only: the migration history, and the audit trail with each of its partitions (if migrated).
REVOKE INSERT, UPDATE, DELETE ON django_migrations FROM {role};
DO $$
DECLARE
    partition regclass;
BEGIN
    IF to_regclass('audit_events') IS NULL THEN
        RETURN;
    END IF;
    -- Nothing on the key that lets a transaction rewrite trigger-kept history: it is the owner's.
    IF to_regclass('history_rewrite_key') IS NOT NULL THEN
        REVOKE ALL ON history_rewrite_key FROM {role};
    END IF;
    -- Nor on the mark an erasure puts on its own transaction (accounts/sql/0024_erasure.sql).
    IF to_regclass('erasure_in_progress') IS NOT NULL THEN
        REVOKE ALL ON erasure_in_progress FROM {role};
    END IF;
    REVOKE INSERT, UPDATE, DELETE ON audit_events FROM {role};
    FOR partition IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'audit_events'::regclass LOOP
        EXECUTE format('REVOKE ALL ON %s FROM {role}', partition);
    END LOOP;
    -- The outbox is written by triggers that run as the owner: the runtime role reads it; it may
    -- queue nothing itself, nor delete an event or a delivery: retention deletes events through
    -- outbox_events_delete_old(), which keeps every event still due. UPDATE stays for SELECT ... FOR
    -- UPDATE: the table's update trigger refuses every change, to every role.
    IF to_regclass('outbox_events') IS NOT NULL THEN
        REVOKE INSERT ON outbox_events FROM {role};
        REVOKE INSERT ON webhook_deliveries FROM {role};
    END IF;
    -- The consumer groups are registered through outbox_consumer_register(), audited.
    IF to_regclass('outbox_consumers') IS NOT NULL THEN
        REVOKE DELETE ON outbox_events FROM {role};
        REVOKE DELETE ON webhook_deliveries FROM {role};
        REVOKE INSERT, UPDATE, DELETE ON outbox_consumers FROM {role};
    END IF;
    -- Publication rows are made with their event, or for a period by event_publications_backfill(); the
    -- stream is switched by event_stream_start() and event_stream_stop(), all audited.
    IF to_regclass('event_publications') IS NOT NULL THEN
        REVOKE INSERT, DELETE ON event_publications FROM {role};
        REVOKE INSERT, UPDATE, DELETE ON event_stream FROM {role};
    END IF;
END
$$;
"""


def grant_runtime_privileges(*, using: str, **kwargs) -> None:
    """post_migrate: grant the runtime role its privileges on what the migrations made (idempotent).

    Skipped when the runtime and the owner are one role (DATABASE_URL without DATABASE_OWNER_URL).
    Refused, in one sentence, when the runtime role is missing, when DATABASE_URL's login role is not
    in it, or when it could create objects in the schema (PostgreSQL 14's default lets every role
    create in schema public; 15 and newer let only the database's owner)."""
    connection = connections[using]
    runtime_user = connections["default"].settings_dict["USER"]
    if runtime_user == connection.settings_dict["USER"]:
        return
    role = settings.DATABASE_RUNTIME_ROLE
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        if cursor.fetchone() is None:
            raise ImproperlyConfigured(
                f"The runtime role {role!r} does not exist. Create it as docs/configuration.md says"
                ' ("An external PostgreSQL"), or set DATABASE_RUNTIME_ROLE.'
            )
        cursor.execute(
            "SELECT pg_has_role(rolname, %s, 'MEMBER') FROM pg_roles WHERE rolname = %s", [role, runtime_user]
        )
        if cursor.fetchone() != (True,):
            raise ImproperlyConfigured(
                f"DATABASE_URL's login role {runtime_user!r} is not a member of the runtime role {role!r},"
                f" so it could read nothing: GRANT {role} TO {runtime_user}, or set DATABASE_RUNTIME_ROLE."
            )
        cursor.execute(GRANTS.format(role=connection.ops.quote_name(role)))
        cursor.execute("SELECT has_schema_privilege(%s, 'public', 'CREATE'), current_database()", [role])
        may_create, database = cursor.fetchone()
        if may_create:
            raise ImproperlyConfigured(
                f"The runtime role {role!r} may create objects in schema public of database {database!r}"
                " (PostgreSQL 14's default for every role); as a superuser, run"
                " ALTER SCHEMA public OWNER TO pg_database_owner; REVOKE CREATE ON SCHEMA public FROM PUBLIC;"
                " in that database (and in template1, for the databases made later), as PostgreSQL 15 does."
            )

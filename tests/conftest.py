import os

import pytest
from django.db import DatabaseError, connection, connections, transaction

from tests.kafka_broker import KafkaBroker
from tests.smtp import SMTPServer
from tests.support import Server, connect, connect_as_owner, staff_client
from tests.webhook_receiver import WebhookReceiver

# The webhook tests' secret key (WEBHOOK_SECRET_KEYS "t1:<base64>" for their processes).
WEBHOOK_KEY = os.urandom(32)


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, django_db_modify_db_settings):
    """The test database, created and migrated by the owner role; the tests' "default" connection,
    the runtime role, uses it (settings: DATABASES["default"]["TEST"]["MIRROR"]). Under pytest-xdist
    each worker has its own (test_lifecycle_gw0, ...: django_db_modify_db_settings names it)."""
    from django.test.utils import setup_databases, teardown_databases

    with django_db_blocker.unblock():
        config = setup_databases(verbosity=0, interactive=False, aliases={"default", "owner"})
    yield
    with django_db_blocker.unblock():
        connections.close_all()  # the runtime role's session too, or the owner cannot drop the database
        teardown_databases(config, verbosity=0)


@pytest.fixture(scope="session", autouse=True)
def _admin_pages_registered():
    """Every app's admin page registered, as the URLconf registers them before a served process's first
    page: a test that reads the admin's registry before any request finds it filled (lifecycle/apps.py)."""
    from django.contrib import admin

    admin.autodiscover()


@pytest.fixture(scope="session", autouse=True)
def _quick_password_hashing():
    """Argon2id at its least cost in the tests' own process (tests/support.py, QuickArgon2PasswordHasher)."""
    from django.conf import settings
    from django.test.utils import override_settings

    hashers = ["tests.support.QuickArgon2PasswordHasher", *settings.PASSWORD_HASHERS[1:]]
    with override_settings(PASSWORD_HASHERS=hashers):
        yield


# What migrate wrote and every test needs (staff groups, permissions, django-q2's schedules): kept.
KEPT_AFTER_TRANSACTIONAL_TESTS = {
    "django_migrations",
    "django_content_type",
    "auth_permission",
    "auth_group",
    "auth_group_permissions",
    "django_q_schedule",
    "history_rewrite_key",  # made once by its migration: without it no later test may age a row
}


@pytest.fixture(autouse=True)
def _empty_tables_after_transactional_tests(request):
    """Django flushes no table here (the runtime role's alias mirrors the owner's under test, and
    the runtime role may not truncate): the owner empties what the test committed."""
    marker = request.node.get_closest_marker("django_db")
    transactional = bool(marker and marker.kwargs.get("transaction"))
    if transactional and "owner" in (marker.kwargs.get("databases") or ()):
        # Django would flush the owner's alias afterwards: every table, the kept ones above too, so
        # that a later test on this worker would find no django-q2 schedule.
        pytest.fail("a transactional test may not use the owner's alias; connect_as_owner() commits as the owner")
    yield
    if not transactional:
        return
    with connect_as_owner(autocommit=True) as owner:
        tables = [
            name
            for (name,) in owner.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')"
                " AND NOT relispartition"
            )
            if name not in KEPT_AFTER_TRANSACTIONAL_TESTS
        ]
        # Only the tables that hold rows are emptied (a TRUNCATE of all of them took most of a test's
        # time); every sequence the test drew from starts again, as TRUNCATE ... RESTART IDENTITY would
        # (the trail's ids go on).
        with owner.transaction():
            holding = [
                name
                for (name,) in owner.execute(
                    " UNION ALL ".join(f"SELECT '{name}' WHERE EXISTS (SELECT FROM {name})" for name in tables)
                )
            ]
            owner.execute(
                "SELECT setval(d.objid::regclass, s.start_value, false) FROM pg_depend d"
                " JOIN pg_sequences s ON format('%%I.%%I', s.schemaname, s.sequencename)::regclass = d.objid"
                " WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass"
                " AND d.deptype IN ('a', 'i') AND d.refobjid = ANY(%s::regclass[]) AND s.last_value IS NOT NULL",
                [[name for name in tables if name != "audit_events"]],
            )
            if others := [name for name in holding if name != "audit_events"]:
                owner.execute(f"TRUNCATE {', '.join(others)} CASCADE")
            if "audit_events" in holding:
                # The trail too, or its rows would name ids the next test reuses. Only the table's owner
                # can lift the append-only rule, and only for this one statement.
                owner.execute("ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_truncate")
                owner.execute("TRUNCATE audit_events")
                owner.execute("ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_truncate")


@pytest.fixture
def support(db):
    """A Support staff member's admin client."""
    return staff_client("Support")


@pytest.fixture
def auditor(db):
    """An Auditor's admin client."""
    return staff_client("Auditor")


@pytest.fixture
def privacy(db):
    """A Privacy staff member's admin client."""
    return staff_client("Privacy")


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on loopback, and Django's SMTP backend pointed at it."""
    server = SMTPServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    yield server
    server.stop()


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
def owner_sql(django_db_blocker, request):
    """Raw SQL as the owner role (what the runtime role may not do: aged rows, rows the rules
    refuse, direct audit rows), on the owner's own connection inside its own test transaction.
    Needs ``@pytest.mark.django_db(databases=["default", "owner"])``."""

    def run(statement: str, params=None):
        with connections["owner"].cursor() as cursor:
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


@pytest.fixture
def server():
    """Start manage.py runserver on the test database (``server(**env)``); stopped after the test."""
    started = []

    def start(**env) -> Server:
        started.append(Server(**env))
        return started[-1]

    yield start
    for each in started:
        each.stop()


@pytest.fixture
def webhook_settings(settings):
    """The dispatcher's settings for the webhook tests: loopback allowed, one key, short timeouts."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    settings.WEBHOOK_SECRET_KEYS = {"t1": WEBHOOK_KEY}
    settings.WEBHOOKS_RETRY_SCHEDULE = [60, 60, 60]  # tests that retry at once set their own
    settings.WEBHOOKS_CONNECT_TIMEOUT_SECONDS = 2
    settings.WEBHOOKS_TIMEOUT_SECONDS = 3
    return settings


@pytest.fixture
def receiver():
    """A real HTTP receiver on loopback (tests/webhook_receiver.py)."""
    with WebhookReceiver() as receiver:
        yield receiver


@pytest.fixture
def kafka_broker():
    """A real Kafka-protocol broker on a free loopback port (tests/kafka_broker.py), empty, stopped after the test."""
    with KafkaBroker() as broker:
        yield broker

import pytest
from django.db import DatabaseError, connection, transaction

from tests.smtp import SMTPServer
from tests.support import connect, staff_client

# Unmanaged tables are not flushed by Django after transactional tests: empty them ourselves.
LIFECYCLE_TABLES = ["tokens", "accounts", "jobs"]


@pytest.fixture(autouse=True)
def _empty_lifecycle_tables_after_transactional_tests(request):
    yield
    marker = request.node.get_closest_marker("django_db")
    if marker and marker.kwargs.get("transaction"):
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {', '.join(LIFECYCLE_TABLES)} RESTART IDENTITY CASCADE")
            # The trail too, or its rows would name ids the next test reuses. Only the table's owner
            # can lift the append-only rule, and only for this one statement.
            cursor.execute(
                "ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_truncate;"
                " TRUNCATE audit_events;"
                " ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_truncate"
            )


@pytest.fixture
def support(db):
    """A Support staff member's admin client."""
    return staff_client("Support")


@pytest.fixture
def auditor(db):
    """An Auditor's admin client."""
    return staff_client("Auditor")


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
def refused(sql):
    """Assert that the database refuses a statement with a message matching ``match``; the data stays as it was."""

    def check(statement: str, params=None, *, match: str):
        with pytest.raises(DatabaseError, match=match):
            with transaction.atomic():
                sql(statement, params)

    return check

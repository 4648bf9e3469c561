"""The models and the live schema the migrations built stay in step."""

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection

from tests.support import database_url_for_tests, manage

pytestmark = pytest.mark.django_db

# Which PostgreSQL types each Django field type may map onto (enums are USER-DEFINED).
COMPATIBLE = {
    "AutoField": {"integer"},
    "BigAutoField": {"bigint"},
    "BooleanField": {"boolean"},
    "BigIntegerField": {"bigint"},
    "IntegerField": {"integer"},
    "SmallIntegerField": {"smallint"},
    "CharField": {"text", "character varying", "USER-DEFINED"},
    "TextField": {"text"},
    "DateField": {"date"},
    "DateTimeField": {"timestamp with time zone"},
    "BinaryField": {"bytea"},
    "ForeignKey": {"bigint", "integer", "uuid"},
    "OneToOneField": {"bigint"},
    "UUIDField": {"uuid"},
    "GenericIPAddressField": {"inet"},
    "JSONField": {"jsonb"},
    "ArrayField": {"ARRAY"},
}
# Every model that maps onto a table the SQL files make: none can be left out.
UNMANAGED_MODELS = [model for model in apps.get_models() if not model._meta.managed]


def live_columns(table: str) -> dict[str, tuple[str, bool]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns WHERE table_name = %s",
            [table],
        )
        return {name: (data_type, nullable) for name, data_type, nullable in cursor.fetchall()}


@pytest.mark.parametrize("model", UNMANAGED_MODELS, ids=lambda m: m._meta.label)
def test_every_model_field_is_a_column_of_a_compatible_type(model):
    columns = live_columns(model._meta.db_table)
    assert columns, f"table {model._meta.db_table} is missing"
    for field in model._meta.concrete_fields:
        assert field.column in columns, f"{model._meta.label}.{field.name}: no column {field.column}"
        data_type, nullable = columns[field.column]
        assert data_type in COMPATIBLE[field.get_internal_type()], f"{field.name}: {data_type}"
        assert nullable == field.null, f"{model._meta.label}.{field.name}: nullable {nullable} in the table"


@pytest.mark.parametrize("model", UNMANAGED_MODELS, ids=lambda m: m._meta.label)
def test_every_column_has_a_model_field(model):
    fields = {field.column for field in model._meta.concrete_fields}
    assert set(live_columns(model._meta.db_table)) == fields


def test_every_table_of_ours_is_checked():
    assert {model._meta.db_table for model in UNMANAGED_MODELS} == {
        "accounts",
        "account_daily_counts",
        "account_passwords",
        "account_sessions",
        "scim_users",
        "tokens",
        "jobs",
        "audit_events",
        "rate_limits",
        "outbox_events",
        "webhook_subscriptions",
        "webhook_deliveries",
        "processed_events",
        "api_clients",
        "idempotency_keys",
        "services",
        "nodes",
        "node_assignments",
    }


def test_the_models_match_their_migrations():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_the_migrations_reverse_cleanly_and_apply_again():
    """As an operator would: manage.py migrate, which runs as the owner role."""
    roles = {"DATABASE_URL": database_url_for_tests(), "DATABASE_OWNER_URL": database_url_for_tests("owner")}
    for app in ("accounts", "platform_events"):
        result = manage("migrate", app, "zero", "--no-input", **roles)
        assert result.returncode == 0, result.stderr
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_class WHERE relname IN ('accounts', 'tokens', 'jobs', 'audit_events', 'rate_limits',"
            " 'outbox_events', 'webhook_subscriptions', 'webhook_deliveries', 'processed_events',"
            " 'api_clients', 'idempotency_keys')"
            " UNION ALL SELECT count(*) FROM pg_type WHERE typname IN ('account_status', 'token_action', 'job_type')"
            " UNION ALL SELECT count(*) FROM pg_proc WHERE proname LIKE 'trg_%' OR proname LIKE 'lifecycle_%'"
            " OR proname LIKE 'accounts_%' OR proname LIKE 'tokens_%' OR proname LIKE 'audit_%'"
            " OR proname LIKE 'outbox_%' OR proname LIKE 'webhook_%' OR proname = 'account_event_data'"
            " OR proname = 'set_updated_at' OR proname LIKE 'api_%'"
        )
        assert [n for (n,) in cursor.fetchall()] == [0, 0, 0]
    result = manage("migrate", "--no-input", **roles)
    assert result.returncode == 0, result.stderr
    assert set(live_columns("tokens")) >= {"secret", "code", "account"}

"""The audit trail's names: every action and resource type the SQL writes is a member of its enum."""

import re
from pathlib import Path

from django.apps import apps

from platform_events.models import AuditAction, ResourceType

# The SQL files in force (the reverse files only restore earlier definitions).
SQL = "\n".join(
    path.read_text()
    for app in apps.get_app_configs()
    for path in sorted((Path(app.path) / "sql").glob("*.sql"))
    if not path.name.endswith(".reverse.sql")
)


def test_every_action_the_sql_writes_is_an_audit_action_and_every_audit_action_is_written():
    written = set(re.findall(r"'((?:account|token|audit)\.[a-z_]+)'", SQL))
    assert written == set(AuditAction.values)


def test_every_resource_type_the_sql_writes_is_a_resource_type():
    # audit_record*(action, resource_type, ...): the literal after the action.
    written = set(re.findall(r"'(?:account|token|audit)\.[a-z_]+',\s*'([a-z_]+)'", SQL))
    assert written == set(ResourceType.values)

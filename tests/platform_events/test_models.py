"""The names the SQL writes: every audit action and resource type, and every outbox event type, is a
member of its enum, and every member is written."""

import re
from pathlib import Path

from django.apps import apps

from platform_events.audit.models import AuditAction, ResourceType
from platform_events.outbox.models import TEST_EVENT_TYPE, EventType

# The SQL files in force (the reverse files only restore earlier definitions).
FILES = [
    path
    for app in apps.get_app_configs()
    for path in sorted((Path(app.path) / "sql").glob("*.sql"))
    if not path.name.endswith(".reverse.sql")
]
ALL_SQL = "\n".join(path.read_text() for path in FILES)
# The account triggers that publish events (trg_after_account_*_outbox, trg_after_password_outbox) name
# event types, not audit actions.
OUTBOX_FUNCTION = re.compile(r"FUNCTION trg_after_\w+_outbox\(\).*?\n\$\$;", re.DOTALL)
# And the events appended by a function's own call (account_erase()'s account.erased).
OUTBOX_SQL = "\n".join(OUTBOX_FUNCTION.findall(ALL_SQL) + re.findall(r"outbox_append_many\('account'[^;]*;", ALL_SQL))
SQL = OUTBOX_FUNCTION.sub("", ALL_SQL)
# What an audit action starts with: the kind of thing it is about.
SUBJECTS = (
    "(?:account|token|audit|webhook|api_client|service|node|node_assignment|staff_user|group|permission|content_type"
    "|consumer|event)"
)


def test_every_action_the_sql_writes_is_an_audit_action_and_every_audit_action_is_written():
    written = set(re.findall(rf"'({SUBJECTS}\.[a-z_]+)'", SQL)) - {TEST_EVENT_TYPE}
    assert written == set(AuditAction.values)


def test_every_resource_type_the_sql_writes_is_a_resource_type():
    # audit_record*(action, resource_type, ...): the literal after the action (or after a CASE of actions).
    written = set(re.findall(rf"'{SUBJECTS}\.(?!test')[a-z_]+'(?:\s*END)?,\s*'([a-z_]+)'", SQL))
    assert written == set(ResourceType.values)


def test_every_event_type_the_outbox_triggers_publish_is_an_event_type():
    assert set(re.findall(r"'(account\.[a-z_]+)'", OUTBOX_SQL)) == set(EventType.values)

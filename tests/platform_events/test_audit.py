"""The audit trail, written by the database for every client, and the context that names who acts."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.services import account_suspend, account_unsuspend
from lifecycle.factories import AccountFactory
from platform_events.audit import set_audit_context
from platform_events.models import AuditEvent
from tokens.errors import WrongCode
from tokens.models import MAX_CODE_ATTEMPTS, Token, secret_to_text
from tokens.services import token_consume, token_consume_code

pytestmark = pytest.mark.django_db


def trail(resource_type, resource_id):
    return list(
        AuditEvent.objects.filter(resource_type=resource_type, resource_id=str(resource_id)).order_by(
            "occurred_at", "action"
        )
    )


def test_a_status_change_made_in_psql_is_audited_as_the_database_role(sql):
    account = AccountFactory(active=True)
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account.pk])
    event = trail("account", account.pk)[-1]
    assert (event.action, event.actor_type, event.actor_id) == (
        "account.suspended",
        "SYSTEM",
        sql("SELECT current_user")[0][0],
    )
    assert event.reason is None


def test_only_the_changed_fields_are_kept(sql):
    account = AccountFactory(active=True)
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account.pk])
    event = trail("account", account.pk)[-1]
    assert set(event.diff_before) == set(event.diff_after)
    # status_changed_at too, unless it was already this transaction's now() (as in a test's transaction).
    assert {"status", "suspended_at"} <= set(event.diff_after) <= {"status", "status_changed_at", "suspended_at"}
    assert (event.diff_before["status"], event.diff_after["status"]) == ("active", "suspended")
    assert event.diff_before["suspended_at"] is None


def test_a_suspension_by_staff_names_them_and_their_reason():
    staff = get_user_model().objects.create_user("support1", is_staff=True)
    account = AccountFactory(active=True)
    account_suspend(account=account, actor=staff, reason="chargeback fraud")
    account_unsuspend(account=account, actor=staff, reason="cleared by the bank")
    suspended, unsuspended = trail("account", account.pk)[-2:]
    assert (suspended.action, suspended.actor_type, suspended.actor_id, suspended.actor_display, suspended.reason) == (
        "account.suspended",
        "USER",
        str(staff.pk),
        "support1",
        "chargeback fraud",
    )
    assert (unsuspended.action, unsuspended.reason) == ("account.unsuspended", "cleared by the bank")


@pytest.mark.django_db(transaction=True)
def test_the_context_ends_with_the_transaction(sql):
    staff = get_user_model().objects.create_user("support1", is_staff=True)
    account = AccountFactory(active=True)
    with transaction.atomic():
        set_audit_context(actor=staff, reason="first")
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account.pk])
    assert trail("account", account.pk)[-1].actor_type == "SYSTEM"


@pytest.mark.django_db(transaction=True)
def test_set_audit_context_needs_a_transaction():
    with pytest.raises(RuntimeError, match="inside transaction.atomic"):
        set_audit_context(reason="nowhere")


def test_creation_activation_and_address_changes_are_audited(sql):
    account = AccountFactory(email="jane@example.com", login="jane")
    token_consume(secret=bytes(Token.objects.get(account=account).secret))
    sql("UPDATE accounts SET email = 'jane.doe@example.com' WHERE id = %s", [account.pk])
    actions = [event.action for event in trail("account", account.pk)]
    assert actions == ["account.created", "account.activated", "account.changed"]
    changed = trail("account", account.pk)[-1]
    assert (changed.diff_before, changed.diff_after) == (
        {"email": "jane@example.com"},
        {"email": "jane.doe@example.com"},
    )


def test_tokens_issued_consumed_and_burnt_are_audited_without_secret_or_code():
    consumed = Token.objects.get(account=AccountFactory())
    token_consume(secret=bytes(consumed.secret))
    burnt = Token.objects.get(account=AccountFactory(login="jane"))
    wrong = "00000" if burnt.code != "00000" else "11111"
    for _ in range(MAX_CODE_ATTEMPTS):
        with pytest.raises(WrongCode):
            token_consume_code(identifier="jane", code=wrong)
    assert [e.action for e in trail("token", consumed.pk)] == ["token.issued", "token.consumed"]
    assert [e.action for e in trail("token", burnt.pk)] == ["token.issued", "token.burnt"]
    everything = json.dumps([[e.diff_before, e.diff_after, e.reason] for e in AuditEvent.objects.all()])
    for token in (consumed, burnt):
        assert token.code not in everything
        assert secret_to_text(token.secret) not in everything
        assert bytes(token.secret).hex() not in everything


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE audit_events SET reason = 'rewritten'", "platform_events: audit events cannot be changed or deleted"),
        ("DELETE FROM audit_events", "platform_events: audit events cannot be changed or deleted"),
        ("TRUNCATE audit_events", "platform_events: audit events cannot be changed or deleted"),
    ],
)
def test_audit_rows_cannot_be_changed_or_deleted(refused, sql, statement, message):
    AccountFactory()
    before = sql("SELECT count(*) FROM audit_events")
    refused(statement, match=message)
    assert sql("SELECT count(*) FROM audit_events") == before

"""The audit trail, written by the database for every client, and the context that names who acts."""

import json

import psycopg
import pytest
from django.contrib.auth import get_user_model

from accounts.services import account_suspend, account_unsuspend
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context, request_origin
from platform_events.audit.models import AuditEvent
from tests.support import connect_as_owner, max_code_attempts, wrong_code
from tokens.errors import WrongCode
from tokens.links import secret_to_text
from tokens.selectors import live_token
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
    """The rows name the staff user (staff:<id>, apart from accounts' ids) and the reason they gave."""
    staff = get_user_model().objects.create_user("support1", is_staff=True)
    account = AccountFactory(active=True)
    with audit_context(reason="chargeback fraud"):
        account_suspend(account=account, actor=staff)
    with audit_context(reason="cleared by the bank"):
        account_unsuspend(account=account, actor=staff)
    suspended, unsuspended = trail("account", account.pk)[-2:]
    assert (suspended.action, suspended.actor_type, suspended.actor_id, suspended.actor_display, suspended.reason) == (
        "account.suspended",
        "USER",
        f"staff:{staff.pk}",
        "support1",
        "chargeback fraud",
    )
    assert (unsuspended.action, unsuspended.reason) == ("account.unsuspended", "cleared by the bank")


def test_an_account_acting_for_itself_is_audited_as_that_account():
    """An end user activating by their link is the actor: account:<id>, shown by login, apart from staff ids."""
    account = AccountFactory(login="jane")
    token = live_token(account=account)
    token_consume(secret=bytes(token.secret), actor=account)
    rows = trail("account", account.pk)[-1:] + trail("token", token.pk)[-1:]
    assert [(e.action, e.actor_type, e.actor_id, e.actor_display) for e in rows] == [
        ("account.activated", "USER", f"account:{account.pk}", "jane"),
        ("token.consumed", "USER", f"account:{account.pk}", "jane"),
    ]


def test_an_origin_carried_as_json_is_audited_as_its_request_would_be(rf):
    """A task run after the response, given request_origin() through JSON, writes the request's IP and
    user agent, and the request id the origin carries."""
    staff = get_user_model().objects.create_user("support1", is_staff=True)
    in_request, in_task = AccountFactory.create_batch(2, active=True)
    request = rf.post("/admin/", REMOTE_ADDR="192.0.2.7", HTTP_USER_AGENT="Firefox")
    origin = json.loads(json.dumps(request_origin(request)))
    with audit_context(request=request):
        account_suspend(account=in_request, actor=staff)
    with audit_context(origin=origin):
        account_suspend(account=in_task, actor=staff)
    direct, carried = trail("account", in_request.pk)[-1], trail("account", in_task.pk)[-1]
    assert (str(carried.actor_ip), carried.actor_user_agent) == (str(direct.actor_ip), direct.actor_user_agent)
    assert (str(carried.actor_ip), carried.actor_user_agent) == ("192.0.2.7", "Firefox")
    assert str(carried.request_id) == origin["request_id"] and direct.request_id is not None


def test_an_origin_with_a_field_other_than_ip_user_agent_or_request_id_is_refused():
    """An origin names where a request came from, never who acted."""
    with pytest.raises(ValueError, match=r"unknown origin fields \['actor_id'\]"):
        with audit_context(origin={"actor_ip": "192.0.2.7", "actor_id": "staff:1"}):
            pass


def test_a_request_and_an_origin_together_are_refused(rf):
    """One source for where the action came from, so neither silently wins."""
    request = rf.post("/admin/", REMOTE_ADDR="192.0.2.7")
    with pytest.raises(ValueError, match="give request or origin, not both"):
        with audit_context(request=request, origin=request_origin(request)):
            pass


@pytest.mark.django_db(transaction=True)
def test_one_context_around_an_action_reaches_every_service_transaction_inside_it(rf):
    staff = get_user_model().objects.create_user("support1", is_staff=True)
    accounts = AccountFactory.create_batch(2, active=True)
    request = rf.post("/admin/", REMOTE_ADDR="192.0.2.7", HTTP_USER_AGENT="Firefox")
    with audit_context(reason="spam wave", request=request):
        for account in accounts:
            account_suspend(account=account, actor=staff)  # each in a transaction of its own
    events = [trail("account", account.pk)[-1] for account in accounts]
    assert {(e.action, e.actor_display, e.reason, str(e.actor_ip), e.actor_user_agent) for e in events} == {
        ("account.suspended", "support1", "spam wave", "192.0.2.7", "Firefox")
    }
    assert events[0].request_id is not None and events[0].request_id == events[1].request_id


def test_nested_contexts_merge_the_inner_wins_and_the_outer_comes_back(sql):
    staff = get_user_model().objects.create_user("support1", is_staff=True)
    account = AccountFactory(active=True)
    with audit_context(reason="outer"):
        with audit_context(actor=staff, reason="inner"):
            sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account.pk])
        sql("UPDATE accounts SET status = 'active' WHERE id = %s", [account.pk])
    suspended, unsuspended = trail("account", account.pk)[-2:]
    assert (suspended.actor_type, suspended.actor_display, suspended.reason) == ("USER", "support1", "inner")
    assert (unsuspended.actor_type, unsuspended.reason) == ("SYSTEM", "outer")


@pytest.mark.django_db(transaction=True)
def test_the_context_ends_with_it(sql):
    staff = get_user_model().objects.create_user("support1", is_staff=True)
    account = AccountFactory(active=True)
    with audit_context(reason="first"):
        account_suspend(account=account, actor=staff)
    sql("UPDATE accounts SET status = 'active' WHERE id = %s", [account.pk])
    event = trail("account", account.pk)[-1]
    assert (event.action, event.actor_type, event.reason) == ("account.unsuspended", "SYSTEM", None)


def test_creation_activation_and_address_changes_are_audited(sql):
    account = AccountFactory(email="jane@example.com", login="jane")
    token_consume(secret=bytes(live_token(account=account).secret), actor=None)
    sql("UPDATE accounts SET email = 'jane.doe@example.com' WHERE id = %s", [account.pk])
    actions = [event.action for event in trail("account", account.pk)]
    assert actions == ["account.created", "account.activated", "account.changed"]
    changed = trail("account", account.pk)[-1]
    assert (changed.diff_before, changed.diff_after) == (
        {"email": "jane@example.com"},
        {"email": "jane.doe@example.com"},
    )


def test_a_bulk_sign_up_audits_each_account_and_token_with_its_own_fields(sql):
    sql(
        "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
        " FROM generate_series(1, 3) g"
    )
    created = sql(
        "SELECT a.login, e.diff_after ->> 'login', e.diff_after ->> 'email' FROM audit_events e"
        " JOIN accounts a ON a.id::text = e.resource_id WHERE e.action = 'account.created' ORDER BY a.id"
    )
    assert created == [(f"user{n}", f"user{n}", f"user{n}@example.com") for n in (1, 2, 3)]
    issued = sql(
        "SELECT t.account, (e.diff_after ->> 'account')::bigint FROM audit_events e"
        " JOIN tokens t ON t.id::text = e.resource_id WHERE e.action = 'token.issued'"
    )
    assert len(issued) == 3 and all(account == audited for account, audited in issued)


def test_a_statement_that_inserts_nothing_audits_nothing(sql):
    before = sql("SELECT count(*) FROM audit_events")
    sql("INSERT INTO accounts (email, login) SELECT 'x@example.com', 'x' WHERE false")
    assert sql("SELECT count(*) FROM audit_events") == before


def test_tokens_issued_consumed_and_burnt_are_audited_without_secret_or_code():
    consumed = live_token(account=AccountFactory())
    token_consume(secret=bytes(consumed.secret), actor=None)
    burnt = live_token(account=AccountFactory(login="jane"))
    wrong = wrong_code(burnt.code)
    for _ in range(max_code_attempts()):
        with pytest.raises(WrongCode):
            token_consume_code(identifier="jane", code=wrong, actor=None)
    assert [e.action for e in trail("token", consumed.pk)] == ["token.issued", "token.consumed"]
    rejected = ["token.code_rejected"] * (max_code_attempts() - 1)
    assert [e.action for e in trail("token", burnt.pk)] == ["token.issued", *rejected, "token.burnt"]
    everything = json.dumps([[e.diff_before, e.diff_after, e.reason] for e in AuditEvent.objects.all()])
    for token in (consumed, burnt):
        assert token.code not in everything
        assert secret_to_text(token.secret) not in everything
        assert bytes(token.secret).hex() not in everything


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "statement", ["UPDATE audit_events SET reason = 'rewritten'", "DELETE FROM audit_events", "TRUNCATE audit_events"]
)
def test_audit_rows_cannot_be_changed_or_deleted_even_by_the_owner(statement):
    """The runtime role has no such privilege (test_runtime_role.py); the owner meets the trigger."""
    AccountFactory()
    with connect_as_owner() as owner:
        before = owner.execute("SELECT count(*) FROM audit_events").fetchone()
        with pytest.raises(psycopg.Error, match="platform_events: audit events cannot be changed or deleted"):
            owner.execute(statement)
        owner.rollback()
        assert owner.execute("SELECT count(*) FROM audit_events").fetchone() == before > (0,)

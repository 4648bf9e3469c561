"""Reads of the audit trail (lifecycle/audit_trail/selectors.py): the latest staff actions, as the
dashboard lists them."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.services import account_suspend, account_unsuspend
from lifecycle.audit_trail.selectors import latest_staff_actions
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from tokens.selectors import live_token
from tokens.services import token_consume

pytestmark = pytest.mark.django_db


def test_the_latest_staff_actions_are_listed_newest_first_up_to_the_count(admin_user):
    jane, john = AccountFactory(active=True, login="jane"), AccountFactory(active=True, login="john")
    with audit_context(reason="first"):
        account_suspend(account=jane, actor=admin_user)
    with audit_context(reason="second"):
        account_suspend(account=john, actor=admin_user)
    with audit_context(reason="third"):
        account_unsuspend(account=jane, actor=admin_user)
    assert [event.reason for event in latest_staff_actions(2)] == ["third", "second"]


def test_an_account_acting_for_itself_is_not_a_staff_action(admin_user):
    account = AccountFactory()
    token_consume(secret=bytes(live_token(account=account).secret), actor=account)
    with audit_context(reason="chargeback"):
        account_suspend(account=account, actor=admin_user)
    assert [(event.action, event.actor_id) for event in latest_staff_actions(10)] == [
        ("account.suspended", f"staff:{admin_user.pk}")
    ]


def test_each_staff_action_names_its_account(admin_user):
    account = AccountFactory(active=True, login="jane")
    with audit_context(reason="chargeback"):
        account_suspend(account=account, actor=admin_user)
    (event,) = latest_staff_actions(10)
    assert (event.account_ref, event.account_names["login"]) == (str(account.pk), "jane")


def test_an_erased_account_is_named_account_n_erased_everywhere_the_trail_names_it(admin_user):
    from accounts.erasure import account_erase
    from accounts.services import account_deprovision
    from lifecycle.audit_trail.selectors import account_names

    account = AccountFactory(active=True, login="gonegirl", email="gone.girl@example.com")
    account_deprovision(account=account, actor=admin_user)
    account_erase(account=account, actor=admin_user, reason="asked")

    named = f"#{account.pk} (erased)"
    assert account_names(account.pk) == {"login": named, "email": None, "deleted": False, "erased": True}
    (latest, *_) = latest_staff_actions(5)
    assert latest.action == "account.erased" and latest.account_names["login"] == named


def test_the_latest_staff_actions_are_read_from_their_own_index(admin_user, sql):
    """Not by walking the newest partition's key past every row the triggers wrote for sign-ups and
    tokens (1,400,000 at a million accounts): platform_events/sql/0030_admin_reads.sql (plan read with
    seq scans off, as on a large table)."""
    account = AccountFactory(active=True)
    with audit_context(reason="chargeback"):
        account_suspend(account=account, actor=admin_user)
    sql("SET LOCAL enable_seqscan = off")
    with CaptureQueriesContext(connection) as queries:
        (event,) = latest_staff_actions(10)
    assert event.reason == "chargeback"
    (query,) = [q["sql"] for q in queries.captured_queries if "audit_events" in q["sql"]]
    plan = "\n".join(row for (row,) in sql(f"EXPLAIN {query}"))
    assert "occurred_at_idx" in plan and not re.search(r"audit_events\w*_pkey", plan), plan

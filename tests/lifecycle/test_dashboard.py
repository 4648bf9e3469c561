"""The admin's index page: accounts by status, a 30-day chart, the mail queue, the last staff actions."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from accounts.services import account_suspend
from lifecycle.dashboard import accounts_by_status
from lifecycle.factories import AccountFactory
from platform_events.audit import audit_context
from tests.support import analyze
from tokens.selectors import live_token
from tokens.services import token_consume

pytestmark = pytest.mark.django_db
INDEX = reverse("admin:index")


def test_the_dashboard_shows_each_figure(admin_client, admin_user):
    AccountFactory.create_batch(2)
    AccountFactory(active=True)
    with audit_context(reason="test run"):
        account_suspend(account=AccountFactory(active=True), actor=admin_user)
    response = admin_client.get(INDEX)
    dashboard = response.context["dashboard"]
    assert dashboard["accounts_by_status"] == {"provisioned": 2, "active": 1, "suspended": 1}
    assert dashboard["accounts_estimated"] is False
    assert sum(dashboard["chart"].signups) == 4 and sum(dashboard["chart"].activations) == 2
    assert dashboard["mail_queue"]["depth"] == 2
    assert [e.reason for e in dashboard["staff_actions"]] == ["test run"]
    page = response.content.decode()
    assert "<svg" in page and "<polyline" in page
    assert "2 e-mails due" in page
    assert "account.suspended account" in page


@pytest.mark.django_db(transaction=True)
def test_a_large_table_is_estimated_and_the_page_says_so(admin_client, monkeypatch):
    monkeypatch.setattr("lifecycle.dashboard.EXACT_COUNT_LIMIT", 3)
    AccountFactory.create_batch(4)
    AccountFactory.create_batch(2, active=True)
    AccountFactory.create_batch(2, suspended=True)
    analyze("accounts")
    figures, estimated = accounts_by_status()
    assert estimated and figures == {"provisioned": 4, "active": 2, "suspended": 2}
    assert "estimated from table statistics, not counted" in admin_client.get(INDEX).content.decode()


def test_an_auditor_sees_only_the_staff_actions():
    user = get_user_model().objects.create_user("auditor1", is_staff=True)
    user.groups.set([Group.objects.get(name="Auditor")])
    client = Client()
    client.force_login(user)
    dashboard = client.get(INDEX).context["dashboard"]
    assert set(dashboard) == {"staff_actions"}


def test_an_account_acting_for_itself_is_not_a_staff_action(admin_client, admin_user):
    """End users' own actions are audited as users too; the staff list leaves them out."""
    account = AccountFactory()
    token_consume(secret=bytes(live_token(account=account).secret), actor=account)
    with audit_context(reason="test run"):
        account_suspend(account=account, actor=admin_user)
    staff_actions = admin_client.get(INDEX).context["dashboard"]["staff_actions"]
    assert [(e.action, e.actor_id) for e in staff_actions] == [("account.suspended", f"staff:{admin_user.pk}")]


def test_a_long_mail_queue_is_not_counted_to_the_end(admin_client, monkeypatch):
    monkeypatch.setattr("lifecycle.dashboard.EXACT_COUNT_LIMIT", 2)
    AccountFactory.create_batch(3)
    response = admin_client.get(INDEX)
    assert response.context["dashboard"]["mail_queue"]["more"] is True
    assert "More than 2 e-mails due" in response.content.decode()

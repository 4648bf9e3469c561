"""The back-office as support staff and auditors use it: actions with reasons, roles, audit views."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from accounts.models import Account, AccountStatus
from lifecycle.factories import AccountFactory
from platform_events.models import AuditEvent
from tokens.models import Token, TokenAction, secret_to_text

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:accounts_account_changelist")


def staff(role: str) -> Client:
    user = get_user_model().objects.create_user(f"{role.lower()}1", password="x", is_staff=True)
    user.groups.set([Group.objects.get(name=role)])
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def support():
    return staff("Support")


@pytest.fixture
def auditor():
    return staff("Auditor")


def act(client, action, accounts, reason=None):
    data = {"action": action, "_selected_action": [a.pk for a in accounts]}
    if reason is not None:
        data |= {"confirm": "yes", "reason": reason}
    return client.post(CHANGELIST, data, follow=reason is not None)


def statuses(*accounts):
    return [Account.objects.get(pk=a.pk).status for a in accounts]


class TestActions:
    def test_an_action_first_asks_for_a_reason_and_changes_nothing(self, support):
        account = AccountFactory(active=True)
        response = act(support, "suspend", [account])
        assert response.status_code == 200
        assert "Reason (kept in the audit trail)" in response.content.decode()
        assert statuses(account) == [AccountStatus.ACTIVE]

    def test_an_empty_reason_is_refused(self, support):
        account = AccountFactory(active=True)
        response = act(support, "suspend", [account], reason="   ")
        assert "This field is required." in response.content.decode()
        assert statuses(account) == [AccountStatus.ACTIVE]

    def test_suspending_one_account_leaves_an_audit_row_with_the_staff_user_and_reason(self, support):
        account = AccountFactory(active=True)
        response = act(support, "suspend", [account], reason="chargeback")
        assert "1 suspended." in response.content.decode()
        event = (
            AuditEvent.objects.filter(resource_type="account", resource_id=str(account.pk))
            .order_by("occurred_at")
            .last()
        )
        assert (event.action, event.actor_type, event.actor_display, event.reason) == (
            "account.suspended",
            "USER",
            "support1",
            "chargeback",
        )
        assert str(event.actor_ip) == "127.0.0.1"
        assert event.request_id is not None

    def test_several_accounts_report_what_was_skipped(self, support):
        accounts = AccountFactory.create_batch(3, active=True) + [AccountFactory(suspended=True)]
        response = act(support, "suspend", accounts, reason="spam wave")
        assert "3 suspended; 1 skipped: already suspended." in response.content.decode()
        assert statuses(*accounts) == [AccountStatus.SUSPENDED] * 4

    def test_unsuspend(self, support):
        accounts = [AccountFactory(suspended=True), AccountFactory(active=True)]
        response = act(support, "unsuspend", accounts, reason="cleared")
        assert "1 unsuspended; 1 skipped: not suspended." in response.content.decode()
        assert statuses(*accounts) == [AccountStatus.ACTIVE, AccountStatus.ACTIVE]

    def test_resend_activation(self, support):
        accounts = [AccountFactory(), AccountFactory(active=True)]
        response = act(support, "resend_activation", accounts, reason="lost the e-mail")
        assert "1 sent an activation e-mail; 1 skipped: active" in response.content.decode()
        assert Token.objects.filter(account=accounts[0], action=TokenAction.ACTIVATION).count() == 2

    def test_send_password_recovery(self, support):
        accounts = [AccountFactory(active=True), AccountFactory()]
        response = act(support, "send_password_recovery", accounts, reason="asked by phone")
        assert "1 sent a recovery e-mail; 1 skipped: provisioned" in response.content.decode()
        assert Token.objects.filter(account=accounts[0], action=TokenAction.PASSWORD_RECOVERY).count() == 1


class TestRoles:
    def test_support_cannot_delete_or_edit_accounts(self, support):
        account = AccountFactory(active=True)
        assert "delete_selected" not in support.get(CHANGELIST).content.decode()
        change = reverse("admin:accounts_account_change", args=[account.pk])
        assert support.post(change, {"status": "suspended", "activated_at": ""}).status_code == 403
        assert (
            support.post(reverse("admin:accounts_account_delete", args=[account.pk]), {"post": "yes"}).status_code
            == 403
        )
        assert statuses(account) == [AccountStatus.ACTIVE]

    def test_support_reads_the_audit_trail_but_cannot_change_it(self, support):
        AccountFactory()
        assert support.get(reverse("admin:platform_events_auditevent_changelist")).status_code == 200
        assert support.get(reverse("admin:platform_events_auditevent_add")).status_code == 403

    def test_an_auditor_reads_the_audit_trail_only(self, auditor):
        account = AccountFactory()
        assert auditor.get(reverse("admin:platform_events_auditevent_changelist")).status_code == 200
        assert auditor.get(CHANGELIST).status_code == 403
        response = act(auditor, "suspend", [account], reason="not mine to do")
        assert response.status_code == 403
        assert statuses(account) == [AccountStatus.PROVISIONED]

    def test_anonymous_users_are_sent_to_login(self, client):
        for url in (CHANGELIST, reverse("admin:platform_events_auditevent_changelist")):
            response = client.get(url)
            assert response.status_code == 302 and reverse("admin:login") in response["Location"]


class TestAuditViews:
    def test_the_account_page_links_to_its_audit_trail_which_shows_the_diff(self, support):
        account = AccountFactory(active=True)
        act(support, "suspend", [account], reason="chargeback")
        page = support.get(reverse("admin:accounts_account_change", args=[account.pk])).content.decode()
        link = f"{reverse('admin:platform_events_auditevent_changelist')}?resource_type=account&amp;resource_id={account.pk}"
        assert link in page
        trail = support.get(link.replace("&amp;", "&"))
        events = list(trail.context["cl"].result_list)
        assert {e.resource_id for e in events} == {str(account.pk)}
        assert "status: active → suspended" in trail.content.decode()

    def test_search_by_correlation_or_request_id(self, support):
        account = AccountFactory(active=True)
        act(support, "suspend", [account], reason="chargeback")
        event = AuditEvent.objects.get(action="account.suspended")
        response = support.get(reverse("admin:platform_events_auditevent_changelist") + f"?q={event.request_id}")
        assert list(response.context["cl"].result_list) == [event]

    def test_no_audit_or_admin_page_shows_a_secret_or_code(self, support):
        account = AccountFactory()
        token = Token.objects.get(account=account)
        for url in (
            reverse("admin:platform_events_auditevent_changelist"),
            reverse("admin:accounts_account_change", args=[account.pk]),
            reverse("admin:tokens_token_changelist"),
        ):
            page = support.get(url).content.decode()
            assert token.code not in page and secret_to_text(token.secret) not in page


def test_repeated_failed_logins_lock_the_login_out(settings):
    get_user_model().objects.create_user("support9", password="right-password-123", is_staff=True)
    login = reverse("admin:login")
    client = Client()
    statuses = [
        client.post(login, {"username": "support9", "password": "wrong"}).status_code
        for _ in range(settings.AXES_FAILURE_LIMIT)
    ]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]  # the form again, then the lock-out
    response = client.post(login, {"username": "support9", "password": "right-password-123"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_good_login_works(settings):
    get_user_model().objects.create_user("support8", password="right-password-123", is_staff=True)
    response = Client().post(reverse("admin:login"), {"username": "support8", "password": "right-password-123"})
    assert response.status_code == 302


class TestSearch:
    def test_exact_and_prefix_ignoring_case(self, support):
        jane = AccountFactory(email="Jane.Doe@example.com", login="jdoe")
        AccountFactory(email="john@example.com", login="john")
        for term in ("jane.doe@example.com", "JANE", "jdo", " jdoe "):
            response = support.get(CHANGELIST, {"q": term})
            assert list(response.context["cl"].result_list) == [jane], term

    def test_a_prefix_search_can_use_the_indexes(self, sql):
        from accounts.selectors import accounts_search

        query, params = accounts_search(Account.objects.all(), "jane").query.sql_with_params()
        sql("SET LOCAL enable_seqscan = off")
        plan = "\n".join(row[0] for row in sql(f"EXPLAIN {query}", params))
        assert "accounts_email_idx" in plan and "accounts_login_prefix_idx" in plan


class TestNoFullCounts:
    def test_a_long_unfiltered_list_shows_the_estimate_and_says_so(self, support, sql, monkeypatch):
        monkeypatch.setattr("platform_events.db.estimates.EXACT_COUNT_LIMIT", 3)
        AccountFactory.create_batch(5)
        sql("ANALYZE accounts")
        page = support.get(CHANGELIST).content.decode()
        assert "about 5 accounts (estimated, not counted)" in page

    def test_a_long_filtered_list_says_more_than_the_limit(self, support, monkeypatch):
        monkeypatch.setattr("platform_events.db.estimates.EXACT_COUNT_LIMIT", 3)
        AccountFactory.create_batch(5)
        page = support.get(CHANGELIST, {"status__exact": "provisioned"}).content.decode()
        assert "more than 3 accounts (estimated, not counted)" in page

    def test_a_short_list_is_counted(self, support):
        AccountFactory.create_batch(2)
        assert "2 accounts" in support.get(CHANGELIST).content.decode()

    def test_the_estimate_covers_partitions(self, sql):
        from platform_events.db.estimates import estimated_rows

        AccountFactory.create_batch(3)
        sql("ANALYZE audit_events")
        assert estimated_rows("audit_events") >= 6  # account.created and token.issued for each

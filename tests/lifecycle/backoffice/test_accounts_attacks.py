"""Attacks on the account page's actions (the act view of lifecycle/backoffice/accounts.py) and on the
account list's search and its tiered pages: no action by GET, without the CSRF token or outside the
role, and no 500 for any id, action name, reason, search term or page."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Account, AccountStatus
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.support import act_url, csrf_client, quiet, staff_client

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

ACCOUNTS = "/admin/accounts/account/"


def status_of(account) -> str:
    return Account.objects.get(pk=account.pk).status


# The act view


def test_act_by_get_with_every_parameter_does_not_act(support):
    account = AccountFactory(active=True)
    response = quiet(support).get(act_url(account.pk), {"confirm": "yes", "reason": "because", "post": "yes"})
    assert response.status_code == 200
    assert status_of(account) == AccountStatus.ACTIVE


def test_act_post_without_csrf_token_is_refused():
    account = AccountFactory(active=True)
    client = csrf_client("Support", "support_csrf")
    response = client.post(act_url(account.pk), {"confirm": "yes", "reason": "cross-site"})
    assert response.status_code == 403
    assert status_of(account) == AccountStatus.ACTIVE


@pytest.mark.parametrize("pk", ["999999", "abc", "1e3", "-1", "99999999999999999999999", "%00", "1%2F..%2F2"])
def test_act_on_missing_or_malformed_id_never_500s(support, pk):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(pk), {"confirm": "yes", "reason": "x"})
    assert response.status_code < 500
    assert status_of(account) == AccountStatus.ACTIVE


@pytest.mark.parametrize("action", ["delete_selected", "retry_mail_now", "unlock", "__init__", "get_urls"])
def test_act_with_a_non_staff_action_name_is_refused(support, action):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(account.pk, action), {"confirm": "yes", "reason": "x"})
    assert response.status_code == 404
    assert Account.objects.filter(pk=account.pk).exists()


@pytest.mark.parametrize("role", ["Auditor", None])
def test_act_by_auditor_or_plain_staff_is_refused(role):
    account = AccountFactory(active=True)
    if role:
        client = staff_client(role, "attacker")
    else:
        user = get_user_model().objects.create_user("plain", password="x", is_staff=True)
        client = Client()
        client.force_login(user)
    response = quiet(client).post(act_url(account.pk), {"confirm": "yes", "reason": "x"})
    assert response.status_code == 403
    assert status_of(account) == AccountStatus.ACTIVE


@pytest.mark.parametrize("reason", ["x" * 1001, "a\x00b", "   ", "x" * 100_000])
def test_act_with_bad_reason_gets_a_message_and_does_not_act(support, reason):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(account.pk), {"confirm": "yes", "reason": reason})
    assert response.status_code == 200
    assert b"errorlist" in response.content
    assert status_of(account) == AccountStatus.ACTIVE


def test_act_writes_an_audit_row_with_the_staff_member_and_reason(support):
    account = AccountFactory(active=True)
    response = support.post(act_url(account.pk), {"confirm": "yes", "reason": "fraud report 42"})
    assert response.status_code == 302
    assert status_of(account) == AccountStatus.SUSPENDED
    row = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
    assert row.reason == "fraud report 42"
    assert row.actor_id.startswith("staff:")


def test_act_that_does_not_apply_is_skipped_not_500(support):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(account.pk, "unsuspend"), {"confirm": "yes", "reason": "x"}, follow=True)
    assert response.status_code == 200
    assert status_of(account) == AccountStatus.ACTIVE


# Account search and its tiered pages


@pytest.mark.parametrize("page", ["0", "-1", "abc", "99999", "99999999999999999999999", "1.5", "\x00"])
@pytest.mark.parametrize("term", ["user", "example.com", ""])
def test_account_search_pages_never_500(support, term, page):
    for _ in range(3):
        AccountFactory()
    response = quiet(support).get(ACCOUNTS, {"q": term, "p": page})
    assert response.status_code in (200, 302, 400, 404), response.status_code


@pytest.mark.parametrize("term", ["%", "_", "\\", "x" * 100_000, "a\x00b", "%%%_"])
def test_account_search_odd_terms_never_500(support, term):
    AccountFactory()
    response = quiet(support).get(ACCOUNTS, {"q": term})
    assert response.status_code in (200, 400), response.status_code


def test_account_search_percent_does_not_match_everything(support):
    AccountFactory(login="alpha")
    response = support.get(ACCOUNTS, {"q": "%"})
    assert b"alpha" not in response.content.split(b'id="result_list"')[-1]


# Deprovisioning and reprovisioning


@pytest.mark.parametrize("role", ["Auditor", "Integrator"])
@pytest.mark.parametrize(("action", "start"), [("deprovision", "active"), ("reprovision", "deprovisioned")])
def test_auditors_and_integrators_can_neither_deprovision_nor_reprovision(role, action, start):
    """A forged POST, from the page's URL and the list's, changes nothing and writes no audit row."""
    account = AccountFactory(**{start: True})
    client = quiet(staff_client(role, "attacker"))
    assert client.post(act_url(account.pk, action), {"confirm": "yes", "reason": "x"}).status_code == 403
    listed = {"action": action, "_selected_action": [account.pk], "confirm": "yes", "reason": "x"}
    assert client.post(ACCOUNTS, listed).status_code == 403
    assert status_of(account) == start
    moves = AuditEvent.objects.filter(action__in=["account.deprovisioned", "account.reprovisioned"])
    assert not moves.filter(actor_id__startswith="staff:").exists()


def test_support_forging_reprovision_is_refused_and_the_account_stays_deprovisioned(support):
    account = AccountFactory(deprovisioned=True)
    response = quiet(support).post(act_url(account.pk, "reprovision"), {"confirm": "yes", "reason": "x"})
    assert response.status_code == 403
    listed = {"action": "reprovision", "_selected_action": [account.pk], "confirm": "yes", "reason": "x"}
    quiet(support).post(ACCOUNTS, listed)
    assert status_of(account) == AccountStatus.DEPROVISIONED
    assert not AuditEvent.objects.filter(action="account.reprovisioned").exists()


def test_privacy_by_get_with_every_parameter_does_not_reprovision(privacy):
    account = AccountFactory(deprovisioned=True)
    response = quiet(privacy).get(act_url(account.pk, "reprovision"), {"confirm": "yes", "reason": "x", "post": "yes"})
    assert response.status_code == 200
    assert status_of(account) == AccountStatus.DEPROVISIONED


def test_reprovision_without_csrf_token_is_refused():
    account = AccountFactory(deprovisioned=True)
    client = csrf_client("Privacy", "privacy_csrf")
    response = client.post(act_url(account.pk, "reprovision"), {"confirm": "yes", "reason": "cross-site"})
    assert response.status_code == 403
    assert status_of(account) == AccountStatus.DEPROVISIONED

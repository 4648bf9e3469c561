"""Support staff's job in a real browser (Playwright driving Debian's Chromium against a live server):
log in, find an account, suspend it with a reason, see the new status and the audit row, unsuspend it;
then an Auditor, whom the accounts are refused."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from accounts.models import Account, AccountStatus
from lifecycle.factories import AccountFactory
from tests.browser.conftest import needs_chromium

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]
PASSWORD = "a-long-test-password-42"


def staff_user(username: str, role: str):
    user = get_user_model().objects.create_user(username, password=PASSWORD, is_staff=True)
    user.groups.set([Group.objects.get(name=role)])
    return user


def navigating(page, act):
    """Do ``act`` and wait for the page it loads."""
    with page.expect_navigation():
        act()


def log_in(page, live_server, username):
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    navigating(page, lambda: page.click("input[type=submit]"))


def search(page, term: str):
    page.fill("#searchbar", term)
    navigating(page, lambda: page.press("#searchbar", "Enter"))


def run_action(page, label: str, reason: str):
    page.check("input[name=_selected_action]")
    page.select_option("select[name=action]", label=label)
    navigating(page, lambda: page.click("button[name=index]"))
    page.fill("textarea[name=reason]", reason)
    navigating(page, lambda: page.click("input[type=submit]"))


def test_support_suspends_and_unsuspends_an_account_and_an_auditor_cannot(browser, live_server):
    account = AccountFactory(active=True, email="jane.doe@example.com", login="janedoe")
    AccountFactory(active=True, email="john@example.com", login="john")
    staff_user("support1", "Support")
    staff_user("auditor1", "Auditor")

    page = browser.new_page()
    log_in(page, live_server, "support1")
    page.goto(f"{live_server.url}/admin/accounts/account/")
    search(page, "JANE.DOE")
    assert page.locator("#result_list tbody tr").count() == 1

    run_action(page, "Suspend selected accounts", "chargeback reported by the bank")
    assert "1 account suspended." in page.locator(".messagelist").inner_text()
    assert Account.objects.get(pk=account.pk).status == AccountStatus.SUSPENDED
    search(page, "janedoe")
    assert page.locator("#result_list tbody tr td.field-status_badge").inner_text() == "suspended"

    navigating(page, lambda: page.click("#result_list a:text('janedoe')"))
    navigating(page, lambda: page.click("text=Audit events of this account"))
    first_row = page.locator("#result_list tbody tr").first.inner_text()
    assert "account.suspended" in first_row and "support1" in first_row
    assert "chargeback reported by the bank" in first_row
    assert re.search(r"status: active → suspended", first_row)

    page.goto(f"{live_server.url}/admin/accounts/account/?q=janedoe")
    run_action(page, "Unsuspend selected accounts", "the bank withdrew the chargeback")
    assert "1 account unsuspended." in page.locator(".messagelist").inner_text()
    assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE
    page.close()

    page = browser.new_page()
    log_in(page, live_server, "auditor1")
    response = page.goto(f"{live_server.url}/admin/accounts/account/")
    assert response.status == 403
    page.goto(f"{live_server.url}/admin/platform_events/auditevent/")
    assert "account.unsuspended" in page.locator("#result_list").inner_text()
    page.close()

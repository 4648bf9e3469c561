"""Support staff's job in a real browser (Playwright driving Debian's Chromium against a live server):
log in, find an account, suspend it with a reason from its page, see the new status, who suspended it
and why, and the audit rows; unsuspend it; the same from the list for several accounts; then an
Auditor, whom the accounts are refused."""

import re

import pytest

from accounts.models import Account, AccountStatus
from lifecycle.demo.factories import AccountFactory
from tests.browser.conftest import log_in, navigating, needs_chromium, shoot, staff_user

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


def search(page, term: str):
    page.fill("#searchbar", term)
    navigating(page, lambda: page.press("#searchbar", "Enter"))


def run_action(page, label: str, reason: str):
    page.check("input[name=_selected_action]")
    page.select_option("select[name=action]", label=label)
    navigating(page, lambda: page.click("button[name=index]"))
    page.fill("textarea[name=reason]", reason)
    navigating(page, lambda: page.click("input[type=submit]"))


def test_support_acts_from_the_account_page(browser, live_server):
    """Suspend with a reason from the account's own page, read why and by whom on it, unsuspend there."""
    account = AccountFactory(active=True, email="jane.doe@example.com", login="janedoe")
    staff_user("support1", "Support")
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    log_in(page, live_server, "support1")
    page.goto(f"{live_server.url}/admin/accounts/account/")
    search(page, "janedoe")
    navigating(page, lambda: page.click("#result_list a:text('janedoe')"))
    shoot(page, "account-page-active")
    assert page.locator(".field-status_badge .readonly").inner_text() == "active"
    assert page.locator(".object-tools a.account-action").all_inner_texts() == [
        "SUSPEND",
        "SEND A PASSWORD-RECOVERY E-MAIL",
        "DEPROVISION",
    ]

    navigating(page, lambda: page.click(".object-tools a:text-is('Suspend')"))
    shoot(page, "account-page-suspend-confirmation")
    assert page.locator("textarea[name=reason]").get_attribute("required") is not None  # the server refuses it too
    page.fill("textarea[name=reason]", "chargeback reported by the bank")
    navigating(page, lambda: page.click("input[type=submit]"))

    shoot(page, "account-page-suspended")
    assert page.url.endswith(f"/admin/accounts/account/{account.pk}/change/")
    assert "1 account suspended." in page.locator(".messagelist").inner_text()
    assert page.locator(".field-status_badge .readonly").inner_text() == "suspended"
    suspension = page.locator(".field-suspension .readonly").inner_text()
    assert "by support1" in suspension and "reason: chargeback reported by the bank" in suspension
    latest = page.locator("#recent-trail tbody tr").first.inner_text()
    assert "account.suspended" in latest and "support1" in latest

    navigating(page, lambda: page.click(".object-tools a:text-is('Unsuspend')"))
    page.fill("textarea[name=reason]", "the bank withdrew the chargeback")
    navigating(page, lambda: page.click("input[type=submit]"))
    assert page.locator(".field-status_badge .readonly").inner_text() == "active"
    assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE
    page.close()


def test_support_suspends_and_unsuspends_from_the_list_and_an_auditor_cannot(browser, live_server):
    account = AccountFactory(active=True, email="jane.doe@example.com", login="janedoe")
    AccountFactory(active=True, email="john@example.com", login="john")
    staff_user("support1", "Support")
    staff_user("auditor1", "Auditor")

    page = browser.new_page(viewport={"width": 1366, "height": 768})
    log_in(page, live_server, "support1")
    page.goto(f"{live_server.url}/admin/accounts/account/")
    shoot(page, "account-list")
    search(page, "JANE.DOE")
    assert page.locator("#result_list tbody tr").count() == 1

    run_action(page, "Suspend selected accounts", "chargeback reported by the bank")
    assert "1 account suspended." in page.locator(".messagelist").inner_text()
    assert Account.objects.get(pk=account.pk).status == AccountStatus.SUSPENDED
    search(page, "janedoe")
    assert page.locator("#result_list tbody tr td.field-status_badge").inner_text() == "suspended"

    navigating(page, lambda: page.click("#result_list a:text('janedoe')"))
    navigating(page, lambda: page.click(".object-tools a:text-is('Audit trail')"))
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

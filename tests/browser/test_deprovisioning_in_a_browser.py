"""Ending an account and bringing it back in a real browser: Support deprovisions it from its page with
a reason and reads since when, by whom and why; Support is offered no Reprovision; Privacy reprovisions
it from its page, and the account is provisioned again with a fresh activation e-mail queued; then
Privacy erases a deprovisioned account after the page that names what goes, and its page and trail
read as "account #N (erased)"."""

import pytest

from accounts.models import Account, AccountStatus
from lifecycle.demo.factories import AccountFactory
from tests.browser.conftest import SCREEN, log_in, navigating, needs_chromium, shoot, staff_user
from tokens.models import Token, TokenAction

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


def buttons(page) -> list[str]:
    return page.locator(".object-tools a.account-action").all_inner_texts()


def test_support_deprovisions_and_privacy_reprovisions_from_the_account_page(browser, live_server):
    account = AccountFactory(active=True, email="jane.doe@example.com", login="janedoe")
    staff_user("support1", "Support")
    staff_user("privacy1", "Privacy")
    account_page = f"{live_server.url}/admin/accounts/account/{account.pk}/change/"

    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "support1")
    page.goto(account_page)
    assert "DEPROVISION" in buttons(page)
    navigating(page, lambda: page.click(".object-tools a:text-is('Deprovision')"))
    shoot(page, "account-page-deprovision-confirmation")
    assert "Deprovision this account? It can no longer sign in" in page.locator("#content").inner_text()
    page.fill("textarea[name=reason]", "the person asked by e-mail to close the account")
    navigating(page, lambda: page.click("input[type=submit]"))

    shoot(page, "account-page-deprovisioned")
    assert page.url == account_page
    assert "1 account deprovisioned." in page.locator(".messagelist").inner_text()
    assert page.locator(".field-status_badge .readonly").inner_text() == "deprovisioned"
    deprovisioning = page.locator(".field-deprovisioning .readonly").inner_text()
    assert "by support1" in deprovisioning
    assert "reason: the person asked by e-mail to close the account" in deprovisioning
    assert page.locator(".field-deprovisioned_at .readonly").inner_text() != "-"
    assert buttons(page) == []  # Reprovision is Privacy's
    page.close()

    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "privacy1")
    page.goto(account_page)
    assert buttons(page) == ["REPROVISION", "ERASE NOW"]
    navigating(page, lambda: page.click(".object-tools a:text-is('Reprovision')"))
    shoot(page, "account-page-reprovision-confirmation")
    assert "Reprovision this account? It goes back to provisioned" in page.locator("#content").inner_text()
    page.fill("textarea[name=reason]", "the person withdrew the request")
    navigating(page, lambda: page.click("input[type=submit]"))

    shoot(page, "account-page-reprovisioned")
    assert "1 account reprovisioned." in page.locator(".messagelist").inner_text()
    assert page.locator(".field-status_badge .readonly").inner_text() == "provisioned"
    latest = page.locator("#recent-trail tbody tr").all_inner_texts()
    assert any("account.reprovisioned" in row and "privacy1" in row for row in latest)
    assert Account.objects.get(pk=account.pk).status == AccountStatus.PROVISIONED
    assert Token.objects.filter(account=account, action=TokenAction.ACTIVATION, consumed_at=None).exists()
    page.close()


def test_privacy_erases_a_deprovisioned_account_from_its_page(browser, live_server):
    account = AccountFactory(deprovisioned=True, email="erin.gone@example.com", login="eringone")
    staff_user("privacy1", "Privacy")
    account_page = f"{live_server.url}/admin/accounts/account/{account.pk}/change/"

    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "privacy1")
    page.goto(account_page)
    navigating(page, lambda: page.click(".object-tools a:text-is('Erase now')"))
    shoot(page, "account-page-erase-confirmation")
    asked = page.locator("#content").inner_text()
    assert f"Erase account #{account.pk} now? This cannot be undone." in asked
    assert "erin.gone@example.com" in asked and "eringone" in asked
    page.fill("textarea[name=reason]", "erin.gone@example.com asked for erasure by letter")
    navigating(page, lambda: page.click("input[type=submit]"))

    shoot(page, "account-page-erased")
    assert page.url == account_page
    assert "Account erased." in page.locator(".messagelist").inner_text()
    assert page.locator(".field-status_badge .readonly").inner_text() == "erased"
    erasure = page.locator(".field-erasure .readonly").inner_text()
    assert "by privacy1" in erasure and "reason: [erased] asked for erasure by letter" in erasure
    assert f"account #{account.pk} (erased)" in page.locator("#content").inner_text()
    assert "erin.gone" not in page.content() and "eringone" not in page.content()
    assert buttons(page) == []
    assert page.locator(".field-deprovisioning .readonly").inner_text().startswith("on ")
    assert page.locator(".field-password_state .readonly").inner_text() == "none (erased with the account)"
    latest = page.locator("#recent-trail tbody tr").all_inner_texts()
    assert any("account.erased" in row and "privacy1" in row for row in latest)
    assert any("account.created" in row for row in latest)

    # The dashboard counts it among the erased, and the list shows it without address or login.
    page.goto(f"{live_server.url}/admin/")
    shoot(page, "dashboard-with-an-erased-account")
    erased = page.locator("a[href='/admin/accounts/account/?status__exact=erased']")
    assert erased.count() == 1
    navigating(page, lambda: erased.click())
    shoot(page, "account-list-erased")
    rows = page.locator("#result_list tbody tr").all_inner_texts()
    assert len(rows) == 1 and "erased" in rows[0] and "erin" not in rows[0]
    page.goto(f"{live_server.url}/admin/platform_events/auditevent/?account={account.pk}")
    shoot(page, "audit-trail-of-an-erased-account")
    trail = page.locator("#result_list tbody").inner_text()
    assert f"account #{account.pk} (erased)" in trail and "e-mail erased" in trail and "erin" not in trail
    page.close()

"""An end user's whole journey in a real browser (Playwright driving Chromium against a live server,
e-mails through a real SMTP server, the queued work run from django-q2's queue): sign up, activate by
the e-mail's link, ask for recovery, set a new password with the e-mail's code; and each refusal
page on the way."""

import re

import pytest
from django.contrib.auth.hashers import check_password

from accounts.models import Account, AccountPassword, AccountStatus
from lifecycle.demo.factories import AccountFactory
from tests.browser.conftest import needs_chromium, shoot
from tests.support import run_queued_tasks
from tokens.mailroom.drain import drain

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

FIRST_PASSWORD = "violet tulips in april 31"
NEW_PASSWORD = "seven quiet harbours 1874"


@pytest.fixture
def site(live_server, smtp_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server


def submit(page, button: str):
    with page.expect_navigation():
        page.click(f"button:text('{button}')")


def newest_mail(smtp_server, kind: str) -> tuple[str, str]:
    """Run the queued requests and the mailroom, then read the newest e-mail: its link and its code."""
    run_queued_tasks()
    drain()
    body = smtp_server.messages[-1].get_body(("plain",)).get_content()
    link = re.search(rf"https?://\S+/{kind}/[A-Za-z0-9_-]{{43}}", body).group(0)
    code = re.search(r"enter this code [^:]*: (\d{5})", body).group(1)
    return link, code


def test_sign_up_activate_recover_by_code_and_every_refusal(browser, site, smtp_server):
    page = browser.new_page(viewport={"width": 1366, "height": 768})

    # Sign up.
    page.goto(f"{site.url}/signup/")
    shoot(page, "01-sign-up")
    page.fill("#id_email", "jane.doe@example.com")
    page.fill("#id_login", "janedoe")
    page.fill("#id_password", FIRST_PASSWORD)
    page.fill("#id_password_again", FIRST_PASSWORD)
    submit(page, "Sign up")
    assert page.locator("h1").inner_text() == "Check your e-mail"
    shoot(page, "02-sign-up-done")

    # Activate by the e-mail's link: the page names the account, masked.
    link, _ = newest_mail(smtp_server, "activate")
    page.goto(link)
    assert "janedoe (j•••e@example.com)" in page.locator(".account").inner_text()
    shoot(page, "03-activate")
    submit(page, "Activate my account")
    assert page.locator("h1").inner_text() == "Your account is active"
    shoot(page, "04-active")
    account = Account.objects.get(login="janedoe")
    assert account.status == AccountStatus.ACTIVE
    assert check_password(FIRST_PASSWORD, AccountPassword.objects.get(account=account).password)

    # The same link again: already used, and the page says the account is active.
    page.goto(link)
    submit(page, "Activate my account")
    assert page.locator("h1").inner_text() == "Already used"
    assert "Your account is active" in page.content()
    shoot(page, "05-already-used")

    # Ask for recovery, then set a new password with the e-mail's code.
    page.goto(f"{site.url}/recover/")
    page.fill("#id_identifier", "JaneDoe")
    submit(page, "Send me an e-mail")
    assert page.locator("h1").inner_text() == "Check your e-mail"
    shoot(page, "06-recovery-asked")
    recovery_link, code = newest_mail(smtp_server, "recover")
    with page.expect_navigation():
        page.click("a:text('Enter the code')")
    page.fill("#id_identifier", "jane.doe@example.com")
    page.fill("#id_code", "00000" if code != "00000" else "11111")
    page.fill("#id_password", NEW_PASSWORD)
    page.fill("#id_password_again", NEW_PASSWORD)
    submit(page, "Change my password")
    assert "This code does not match" in page.locator(".errorlist").inner_text()
    shoot(page, "07-wrong-code")
    page.fill("#id_code", code)
    page.fill("#id_password", "short")
    page.fill("#id_password_again", "short")
    submit(page, "Change my password")
    assert "This password is too short" in page.locator(".errorlist").inner_text()
    shoot(page, "08-weak-password")
    page.fill("#id_password", NEW_PASSWORD)
    page.fill("#id_password_again", NEW_PASSWORD)
    submit(page, "Change my password")
    assert page.locator("h1").inner_text() == "Your password is changed"
    shoot(page, "09-password-changed")
    assert check_password(NEW_PASSWORD, AccountPassword.objects.get(account=account).password)

    # The recovery link of the same e-mail ended with the code's use.
    page.goto(recovery_link)
    page.fill("#id_password", NEW_PASSWORD)
    page.fill("#id_password_again", NEW_PASSWORD)
    submit(page, "Change my password")
    assert page.locator("h1").inner_text() == "Already used"

    # A link that is no token.
    page.goto(f"{site.url}/activate/{'A' * 43}")
    assert page.locator("h1").inner_text() == "This link is not valid"
    shoot(page, "10-not-valid")

    # Asking again and again: the limit's page says when to come back.
    for _ in range(4):
        page.goto(f"{site.url}/resend/")
        page.fill("#id_identifier", "someone@example.com")
        submit(page, "Send me an e-mail")
    assert page.locator("h1").inner_text() == "Too many attempts"
    assert re.search(r"about \d+ minutes?", page.content())  # "1 minute" once the limit's window nearly ended
    shoot(page, "11-too-many")
    page.close()


def test_signing_up_again_with_a_closed_accounts_address_restores_it(browser, site, smtp_server):
    """The person whose account was deprovisioned signs up again with its address: the e-mail offers
    to restore the earlier account, whose page says what that does, and the activation e-mail follows."""
    closed = AccountFactory(login="janedoe", email="jane.doe@example.com", deprovisioned=True)
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{site.url}/signup/")
    page.fill("#id_email", "jane.doe@example.com")
    page.fill("#id_login", "janedoe2")
    page.fill("#id_password", FIRST_PASSWORD)
    page.fill("#id_password_again", FIRST_PASSWORD)
    submit(page, "Sign up")
    assert page.locator("h1").inner_text() == "Check your e-mail"

    run_queued_tasks()
    drain()
    body = smtp_server.messages[-1].get_body(("plain",)).get_content()
    assert "it was closed on" in body
    link = re.search(r"https?://\S+/restore/[A-Za-z0-9_-]{43}", body).group(0)
    page.goto(link)
    assert page.locator("h1").inner_text() == "Restore your account"
    assert "janedoe (j•••e@example.com)" in page.locator(".account").inner_text()
    shoot(page, "restore-01-asked")
    submit(page, "Restore my account")
    assert page.locator("h1").inner_text() == "Your account is restored"
    shoot(page, "restore-02-done")
    closed.refresh_from_db()
    assert closed.status == AccountStatus.PROVISIONED

    # The activation e-mail follows; its link activates the account again (this one, made by staff,
    # never had a password: the page asks for one).
    link, _ = newest_mail(smtp_server, "activate")
    page.goto(link)
    page.fill("#id_password", NEW_PASSWORD)
    page.fill("#id_password_again", NEW_PASSWORD)
    submit(page, "Activate my account")
    assert page.locator("h1").inner_text() == "Your account is active"
    closed.refresh_from_db()
    assert closed.status == AccountStatus.ACTIVE


def test_a_person_deletes_their_account_and_restores_it_from_the_e_mail_that_follows(browser, site, smtp_server):
    """Delete my account: the page asks for the login, the e-mail's link opens a page that says what
    happens and when, its button closes the account, and the e-mail that follows restores it."""
    account = AccountFactory(login="leaver", email="lee.leaver@example.com", active=True)
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{site.url}/delete-account/")
    shoot(page, "delete-01-form")
    page.fill("#id_identifier", "leaver")
    submit(page, "Send me an e-mail")
    assert page.locator("h1").inner_text() == "Check your e-mail"
    assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE

    run_queued_tasks()
    drain()
    body = smtp_server.messages[-1].get_body(("plain",)).get_content()
    link = re.search(r"https?://\S+/delete/[A-Za-z0-9_-]{43}", body).group(0)
    page.goto(link)
    assert page.locator("h1").inner_text() == "Delete your account"
    assert "30 days later it is erased for good" in page.locator("body").inner_text()
    shoot(page, "delete-02-asked")
    submit(page, "Delete my account")
    assert page.locator("h1").inner_text() == "Your account is closed"
    shoot(page, "delete-03-done")
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED

    drain()
    body = smtp_server.messages[-1].get_body(("plain",)).get_content()
    assert "was closed at your request" in body
    page.goto(re.search(r"https?://\S+/restore/[A-Za-z0-9_-]{43}", body).group(0))
    submit(page, "Restore my account")
    assert page.locator("h1").inner_text() == "Your account is restored"
    account.refresh_from_db()
    assert account.status == AccountStatus.PROVISIONED

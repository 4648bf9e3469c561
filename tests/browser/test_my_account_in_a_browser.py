"""An end user's own account in a real browser (Playwright driving Chromium against a live server):
from the activation's "Sign in" to the account page, a wrong password on the way, the list of
sign-ins, and signing out."""

import re

import pytest

from accounts.models import AccountSession, AccountStatus, SessionEnd
from accounts.services import account_password_hash, account_set_password
from lifecycle.demo.factories import AccountFactory
from tests.browser.conftest import SCREEN, needs_chromium, shoot
from tokens.links import landing_path
from tokens.mailroom.drain import drain
from tokens.selectors import live_token

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

PASSWORD = "seven quiet harbours 1874"
NEW_PASSWORD = "violet tulips in april 31"


@pytest.fixture
def site(live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    settings.SIGN_IN_URL = ""
    return live_server


def jane(*, active: bool = True):
    """janedoe, jane.doe@example.com, with PASSWORD: active, or waiting for her activation."""
    account = AccountFactory(login="janedoe", email="jane.doe@example.com", active=active)
    account_set_password(account=account, password_hash=account_password_hash(PASSWORD), actor=None)
    return account


def submit(page, button: str):
    with page.expect_navigation():
        page.click(f"button:text('{button}')")


def test_activate_then_sign_in_see_the_account_and_sign_out(browser, site):
    account = jane(active=False)
    page = browser.new_page(viewport=SCREEN)

    # Activation ends with "Sign in", which leads to the account pages' own sign-in.
    page.goto(f"{site.url}{landing_path(live_token(account=account))}")
    submit(page, "Activate my account")
    with page.expect_navigation():
        page.click("a:text('Sign in')")
    assert page.url == f"{site.url}/account/sign-in/"
    assert page.locator("h1").inner_text() == "Sign in"
    shoot(page, "account-01-sign-in")

    # A wrong password: one sentence, the form again.
    page.fill("#id_identifier", "Jane.Doe@example.com")
    page.fill("#id_password", "not my password")
    submit(page, "Sign in")
    assert "Wrong login, e-mail or password." in page.locator(".errorlist").inner_text()
    shoot(page, "account-02-wrong-password")

    # The right one: the account page, with this browser's sign-in listed.
    page.fill("#id_password", PASSWORD)
    submit(page, "Sign in")
    assert page.url == f"{site.url}/account/"
    facts = page.locator(".facts").inner_text()
    assert "janedoe" in facts and "jane.doe@example.com" in facts and "Active" in facts
    assert "this browser" in page.locator(".sign-ins").inner_text()
    assert "HeadlessChrome 1" in page.locator(".sign-ins").inner_text()  # named, not the raw header
    shoot(page, "account-03-account")

    # The cookie is the account pages' own, and the admin does not take it.
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "lifecycle_account"]
    assert cookie["path"] == "/account/" and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    page.goto(f"{site.url}/admin/")
    assert "/admin/login/" in page.url
    page.goto(f"{site.url}/account/")

    # Sign out: the session ends, and the account page leads to sign-in again.
    submit(page, "Sign out")
    assert page.locator("h1").inner_text() == "You are signed out"
    shoot(page, "account-04-signed-out")
    assert AccountSession.objects.get().ended_by == SessionEnd.SIGN_OUT
    page.goto(f"{site.url}/account/")
    assert page.url == f"{site.url}/account/sign-in/"


def test_change_the_password_and_every_other_browser_is_signed_out(browser, site, smtp_server):
    jane()
    laptop, phone = (browser.new_context(viewport=SCREEN).new_page() for _ in range(2))
    for page in (laptop, phone):
        sign_in(page, site, "janedoe", PASSWORD)

    laptop.click("a:text('Change your password')")
    laptop.wait_for_url(f"{site.url}/account/password/")
    shoot(laptop, "account-06-change-password")
    laptop.fill("#id_current_password", "not my password")
    laptop.fill("#id_password", NEW_PASSWORD)
    laptop.fill("#id_password_again", NEW_PASSWORD)
    submit(laptop, "Change my password")
    assert "This is not your current password." in laptop.locator(".errorlist").inner_text()
    shoot(laptop, "account-07-wrong-current-password")

    laptop.fill("#id_current_password", PASSWORD)
    laptop.fill("#id_password", NEW_PASSWORD)
    laptop.fill("#id_password_again", NEW_PASSWORD)
    submit(laptop, "Change my password")
    assert laptop.locator("h1").inner_text() == "Your password is changed"
    shoot(laptop, "account-08-password-changed")

    # This browser stays signed in; the other one is signed out.
    laptop.goto(f"{site.url}/account/")
    assert laptop.url == f"{site.url}/account/"
    assert "password changed" in laptop.locator(".sign-ins").inner_text()
    phone.goto(f"{site.url}/account/")
    assert phone.url == f"{site.url}/account/sign-in/"
    sign_in(phone, site, "janedoe", NEW_PASSWORD)
    assert phone.url == f"{site.url}/account/"

    # The notice, as the account's address receives it, leads to recovery.
    drain()
    (notice,) = smtp_server.messages
    assert notice["To"] == "jane.doe@example.com" and notice["Subject"] == "Your password was changed"
    assert f"{site.url}/recover/" in notice.get_body(("plain",)).get_content()


def test_delete_the_account_with_the_password_then_restore_it_from_the_e_mail(browser, site, smtp_server):
    account = jane()
    page = browser.new_page(viewport=SCREEN)
    sign_in(page, site, "janedoe", PASSWORD)
    page.click("a:text('Delete your account')")
    page.wait_for_url(f"{site.url}/account/delete/")
    assert "Your password confirms it is you." in page.content()
    shoot(page, "account-09-delete")
    page.fill("#id_password", PASSWORD)
    submit(page, "Delete my account")
    assert page.locator("h1").inner_text() == "Your account is closed"
    shoot(page, "account-10-deleted")
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED
    page.goto(f"{site.url}/account/")
    assert page.url == f"{site.url}/account/sign-in/"

    # The restore e-mail says it was the person's request; its link brings the account back.
    drain()
    body = smtp_server.messages[-1].get_body(("plain",)).get_content()
    assert "closed at your request" in body
    page.goto(re.search(r"https?://\S+/restore/[A-Za-z0-9_-]{43}", body).group(0))
    submit(page, "Restore my account")
    assert page.locator("h1").inner_text() == "Your account is restored"


def test_change_the_address_by_the_link_in_the_e_mail_then_undo_it_from_the_old_one(browser, site, smtp_server):
    account = jane()
    page = browser.new_page(viewport=SCREEN)
    sign_in(page, site, "janedoe", PASSWORD)
    page.click("a:text('Change your e-mail address')")
    page.wait_for_url(f"{site.url}/account/email/")
    shoot(page, "account-11-change-email")
    page.fill("#id_email", "jane.new@example.net")
    page.fill("#id_password", PASSWORD)
    submit(page, "Send the link")
    assert page.locator("h1").inner_text() == "Check your new address"
    shoot(page, "account-12-check-new-address")

    # The link, as the new address receives it: its page asks, its button changes the address.
    drain()
    (confirm,) = [m for m in smtp_server.messages if m["To"] == "jane.new@example.net"]
    page.goto(re.search(r"https?://\S+/email/[A-Za-z0-9_-]{43}", confirm.get_body(("plain",)).get_content()).group(0))
    shoot(page, "account-13-confirm-new-address")
    submit(page, "Confirm my new address")
    assert page.locator("h1").inner_text() == "Your address is changed"
    page.goto(f"{site.url}/account/")
    assert "jane.new@example.net" in page.locator(".facts").inner_text()

    # The old address is told, with a link that puts it back and signs every browser out.
    drain()
    (told,) = [m for m in smtp_server.messages if m["Subject"] == "The address of your account janedoe was changed"]
    assert told["To"] == "jane.doe@example.com"
    undo = re.search(r"https?://\S+/email/undo/[A-Za-z0-9_-]{43}", told.get_body(("plain",)).get_content()).group(0)
    other = browser.new_page(viewport=SCREEN)
    other.goto(undo)
    shoot(other, "account-14-undo")
    submit(other, "Put my address back")
    assert other.locator("h1").inner_text() == "Your address is back"
    shoot(other, "account-15-address-back")
    account.refresh_from_db()
    assert account.email == "jane.doe@example.com"
    page.goto(f"{site.url}/account/")
    assert page.url == f"{site.url}/account/sign-in/"


def sign_in(page, site, name: str, password: str):
    page.goto(f"{site.url}/account/sign-in/")
    page.fill("#id_identifier", name)
    page.fill("#id_password", password)
    submit(page, "Sign in")


def test_the_account_page_at_a_phones_width(browser, site):
    jane()
    page = browser.new_page(viewport={"width": 360, "height": 740})
    page.goto(f"{site.url}/account/sign-in/")
    page.fill("#id_identifier", "janedoe")
    page.fill("#id_password", PASSWORD)
    submit(page, "Sign in")
    assert page.url == f"{site.url}/account/"
    # Nothing wider than the screen: no sideways scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    shoot(page, "account-05-phone")

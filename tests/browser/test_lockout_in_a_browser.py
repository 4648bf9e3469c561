"""The lock-out page in a real browser (Playwright driving Debian's Chromium against a live server): a
staff member mistypes their password until locked out and sees the back-office's page with its length,
its end and whom to ask; a superuser unlocks the login from the admin, and it signs in again. Then an
Auditor opens a page their role does not include and finds the way back.

With SCREENSHOTS set, each page is also saved there at 1366×768."""

import pytest
from django.contrib.auth import get_user_model

from tests.browser.conftest import PASSWORD, SCREEN, needs_chromium, shoot, staff_user

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


def new_page(browser):
    return browser.new_page(viewport=SCREEN)


def sign_in(page, live_server, username: str, password: str):
    """Fill in the sign-in form and send it; the response of the page it loads."""
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation() as navigation:
        page.click("input[type=submit]")
    return navigation.value


def test_a_locked_out_staff_member_sees_why_and_is_unlocked_from_the_admin(browser, live_server, settings):
    settings.STAFF_CONTACT = "it-desk@example.com"
    staff_user("support1", "Support")
    get_user_model().objects.create_superuser("admin1", password=PASSWORD)

    page = new_page(browser)
    statuses = [sign_in(page, live_server, "support1", "wrong").status for _ in range(settings.AXES_FAILURE_LIMIT)]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    assert page.locator("#site-name").inner_text() == "Lifecycle back-office"
    assert page.locator("#nav-sidebar").count() == 0
    text = page.locator("#content-main").inner_text()
    assert "Too many failed sign-ins for this login from your address." in text
    assert "paused for 30 minutes, until" in text
    assert "it-desk@example.com to unlock your login now" in text
    shoot(page, "lockout")
    assert sign_in(page, live_server, "support1", PASSWORD).status == 429  # the right password too, meanwhile

    admin = new_page(browser)
    sign_in(admin, live_server, "admin1", PASSWORD)
    admin.goto(f"{live_server.url}/admin/axes/accessattempt/?q=support1")
    shoot(admin, "unlock-list")
    admin.check("input[name=_selected_action]")
    admin.select_option("select[name=action]", label="Unlock the selected logins")
    with admin.expect_navigation():
        admin.click("button[name=index]")
    assert "Unlock 1 login: support1?" in admin.locator("#content").inner_text()
    shoot(admin, "unlock-confirmation")
    with admin.expect_navigation():
        admin.click("input[value='Yes, unlock']")
    assert "1 login unlocked: support1." in admin.locator(".messagelist").inner_text()
    shoot(admin, "unlock-done")

    assert sign_in(page, live_server, "support1", PASSWORD).status == 200
    assert page.url.endswith("/admin/")
    assert "Dashboard" in page.locator("#content h1").inner_text()


def test_an_auditor_refused_a_page_sees_who_they_are_and_goes_back(browser, live_server):
    staff_user("auditor1", "Auditor")
    page = new_page(browser)
    sign_in(page, live_server, "auditor1", PASSWORD)
    response = page.goto(f"{live_server.url}/admin/accounts/account/")
    assert response.status == 403
    assert page.locator("#site-name").inner_text() == "Lifecycle back-office"
    text = page.locator("#content-main").inner_text()
    assert "Your role does not include this page, /admin/accounts/account/." in text
    assert "You are signed in as auditor1 (role: Auditor)." in text
    shoot(page, "403-auditor")
    with page.expect_navigation():
        page.click("text=Back to the dashboard")
    assert page.url.endswith("/admin/")


def test_a_form_left_open_after_its_cookies_went_is_refused_in_each_parts_look(browser, live_server):
    """The CSRF check fails (the cookies were cleared while the form was open): the public sign-up form
    answers in the public look, the sign-in form in the back-office's."""
    page = new_page(browser)
    page.goto(f"{live_server.url}/signup/")
    page.context.clear_cookies()
    page.fill("#id_email", "jane@example.com")
    page.fill("#id_login", "jane")
    page.fill("#id_password", PASSWORD)
    page.fill("#id_password_again", PASSWORD)
    with page.expect_navigation() as navigation:
        page.click("button[type=submit]")
    assert navigation.value.status == 403
    assert page.locator("h1").inner_text() == "Please send the form again"
    assert "Need help? Contact" in page.locator("footer").inner_text()
    shoot(page, "csrf-public")

    page.goto(f"{live_server.url}/admin/login/")
    page.context.clear_cookies()
    page.fill("#id_username", "support1")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation() as navigation:
        page.click("input[type=submit]")
    assert navigation.value.status == 403
    assert page.locator("#site-name").inner_text() == "Lifecycle back-office"
    assert "This form could not be checked, so nothing was changed." in page.locator("#content-main").inner_text()
    shoot(page, "csrf-admin")

"""The Content-Security-Policy in a real browser: Chromium blocks nothing on the back-office's pages,
the public pages or the API docs, and what needs a script (the Copy button of a key shown once, the
date range filters) works under it."""

import pytest
from django.contrib.auth import get_user_model

from lifecycle.demo.factories import AccountFactory
from tests.browser.conftest import PASSWORD, SCREEN, log_in, navigating, needs_chromium

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

PAGES = [
    "/admin/",
    "/admin/accounts/account/",
    "/admin/accounts/account/{account}/change/",
    "/admin/accounts/node/",
    "/admin/platform_events/auditevent/",
    "/admin/tokens/job/",
    "/admin/platform_events/apiclient/add/",
    "/admin/platform_events/webhooksubscription/add/",
    "/admin/platform_events/webhookdelivery/",
    "/admin/axes/accessattempt/",
    "/admin/auth/user/",
    "/recover/",
    "/signup/",
    "/api/v1/docs",
]


def blocked_by_the_policy(page) -> list[str]:
    """What Chromium refused under the policy on ``page``, as it says it on the console (kept from now on)."""
    blocked = []
    page.on(
        "console", lambda message: blocked.append(message.text) if "Content Security Policy" in message.text else None
    )
    return blocked


def test_no_page_has_anything_blocked_by_the_policy_nor_a_script_error(browser, live_server):
    """Nor an error of a script that ran: without the admin's jQuery, prepopulate_init.js on the add
    forms of API clients and webhook endpoints would throw "$ is not a function"."""
    get_user_model().objects.create_superuser("root", password=PASSWORD)
    account = AccountFactory()
    page = browser.new_page(viewport=SCREEN)
    blocked = blocked_by_the_policy(page)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server, "root")
    for path in PAGES:
        page.goto(live_server.url + path.format(account=account.pk))
        page.wait_for_load_state("networkidle")
        assert blocked == [], path
        assert errors == [], path
    # The API docs' Swagger UI draws itself from its own files.
    assert page.locator(".swagger-ui .info .title").inner_text().startswith("Lifecycle")


def test_the_date_range_filter_gets_its_calendar_from_its_nonced_script(browser, live_server):
    """django-admin-rangefilter's inline script carries the page's nonce: the date fields get their calendar."""
    get_user_model().objects.create_superuser("root", password=PASSWORD)
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "root")
    page.goto(f"{live_server.url}/admin/platform_events/auditevent/")
    page.wait_for_load_state("networkidle")
    assert page.locator(".datetimeshortcuts").count() >= 1


def test_the_copy_button_of_a_key_shown_once_copies_it(browser, live_server):
    """The button's script is a static file (no onclick="" under the policy)."""
    get_user_model().objects.create_superuser("root", password=PASSWORD)
    context = browser.new_context(viewport=SCREEN, permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    blocked = blocked_by_the_policy(page)
    log_in(page, live_server, "root")
    page.goto(f"{live_server.url}/admin/platform_events/apiclient/add/")
    page.fill("#id_name", "billing")
    page.check("input[name=scopes][value='accounts:read']")
    navigating(page, lambda: page.click("input[type=submit]"))
    page.click(".secret-box button")
    assert page.locator(".secret-box button").inner_text() == "Copied"
    assert page.evaluate("navigator.clipboard.readText()") == page.input_value("#api-key")
    assert blocked == []
    context.close()

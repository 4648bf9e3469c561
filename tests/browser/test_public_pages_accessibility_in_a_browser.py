"""Every public page carries the organisation's brand, stays readable at a phone's width, and has no
WCAG 2.1 A or AA violation axe-core can find (axe-playwright-python, with axe-core's own rules), in
Chromium against a live server."""

import pytest
from axe_playwright_python.sync_playwright import Axe

from tests.browser.conftest import SCREEN, needs_chromium, shoot
from tests.browser.test_my_account_in_a_browser import PASSWORD, jane
from tokens.links import landing_path
from tokens.selectors import live_token
from tokens.services import token_request_email_change

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

PHONE = {"width": 360, "height": 740}
WCAG_21_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}
PAGES = ["/signup/", "/activate/", "/resend/", "/recover/", "/recover/code/", "/delete-account/", "/account/sign-in/"]


@pytest.fixture
def site(live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    settings.SITE_NAME = "Example Org"
    settings.SITE_ACCENT_COLOUR = "#7a1f5c"
    return live_server


def violations(page) -> list[str]:
    results = Axe().run(page, options=WCAG_21_AA)
    return [f"{v['id']}: {v['help']} ({len(v['nodes'])}x)" for v in results.response["violations"]]


def check(page, name: str):
    """The brand, no axe violation, and no sideways scrolling at the page's width."""
    assert page.locator(".brand").inner_text().strip() == "Example Org", name
    assert "rgb(122, 31, 92)" in page.evaluate(
        "getComputedStyle(document.querySelector('.brand')).borderBottomColor"
    ), name
    assert violations(page) == [], name
    width = page.viewport_size["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width, name
    shoot(page, f"a11y-{width}-{name}")


@pytest.mark.parametrize("viewport", [SCREEN, PHONE], ids=["1366", "360"])
def test_every_public_form_and_its_answer(browser, site, viewport):
    page = browser.new_page(viewport=viewport)
    for path in PAGES:
        page.goto(f"{site.url}{path}")
        check(page, path.strip("/").replace("/", "-"))
    # A form with its errors, an outcome, and a refusal.
    page.goto(f"{site.url}/account/sign-in/")
    page.fill("#id_identifier", "nobody")
    page.fill("#id_password", "wrong")
    with page.expect_navigation():
        page.click("button:text('Sign in')")
    check(page, "sign-in-refused")
    page.goto(f"{site.url}/recover/")
    page.fill("#id_identifier", "nobody")
    with page.expect_navigation():
        page.click("button")
    check(page, "recover-done")
    page.goto(f"{site.url}/activate/{'A' * 43}")
    check(page, "link-not-valid")


@pytest.mark.parametrize("viewport", [SCREEN, PHONE], ids=["1366", "360"])
def test_the_account_pages_and_the_links_pages(browser, site, viewport):
    account = jane(active=False)
    page = browser.new_page(viewport=viewport)
    page.goto(f"{site.url}{landing_path(live_token(account=account))}")
    check(page, "activate-link")
    with page.expect_navigation():
        page.click("button")
    check(page, "activated")
    page.goto(f"{site.url}/account/sign-in/")
    page.fill("#id_identifier", "janedoe")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button:text('Sign in')")
    for path in ["/account/", "/account/password/", "/account/email/", "/account/delete/"]:
        page.goto(f"{site.url}{path}")
        check(page, path.strip("/").replace("/", "-"))
    account.refresh_from_db()
    page.goto(
        f"{site.url}{landing_path(token_request_email_change(account=account, email='j@example.net', actor=None))}"
    )
    check(page, "email-change-link")

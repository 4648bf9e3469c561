"""Support staff finding accounts and tokens in a real browser (Playwright driving Debian's Chromium
against a live server): an account search by a domain, exact match first; the token list's state
column and its date-range filters."""

import datetime

import pytest
from django.utils import timezone

from lifecycle.demo.factories import AccountFactory
from tests.browser.conftest import SCREEN, log_in, navigating, needs_chromium, shoot, staff_user
from tests.support import tokens_in_every_state

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


@pytest.fixture
def support_page(browser, live_server):
    """A Support staff member's browser tab, logged in."""
    staff_user("support1", "Support")
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "support1")
    yield page
    page.close()


def logins_listed(page) -> list[str]:
    return page.locator("#result_list tbody .field-login").all_inner_texts()


def test_support_finds_the_accounts_of_a_domain(support_page, live_server):
    AccountFactory(login="ann", email="ann@acme.test")
    AccountFactory(login="ops", email="ops@acme.test", active=True)
    AccountFactory(login="bob", email="bob@example.com")
    AccountFactory(login="acme.test", email="it@example.com")  # a login that is the term itself
    page = support_page

    page.goto(f"{live_server.url}/admin/accounts/account/")
    page.fill("#searchbar", "ACME.test")
    navigating(page, lambda: page.press("#searchbar", "Enter"))

    assert logins_listed(page) == ["acme.test", "ops", "ann"]  # the exact match, then the newest first
    assert "3 accounts" in page.locator(".paginator").inner_text()
    assert "then those that hold it (example.com, @example)" in page.locator("#searchbar_helptext").inner_text()
    shoot(page, "accounts-searched-by-domain")


def test_support_reads_each_tokens_state_and_filters_by_dates(support_page, live_server):
    tokens = tokens_in_every_state()
    page = support_page

    page.goto(f"{live_server.url}/admin/tokens/token/")
    listed = {
        row.locator(".field-id").inner_text(): row.locator(".field-state").inner_text()
        for row in page.locator("#result_list tbody tr").all()
    }
    assert {str(token.pk): state.label for state, token in tokens.items()}.items() <= listed.items()
    shoot(page, "tokens-with-state")
    page.locator(".results").evaluate("e => e.scrollLeft = e.scrollWidth")
    shoot(page, "tokens-with-state-scrolled")

    today = timezone.localdate()
    created = page.locator("details[data-filter-title='created at']")
    created.locator("input[name='created_at__range__gte']").fill(str(today - datetime.timedelta(days=1)))
    created.locator("input[name='created_at__range__lte']").fill(str(today))
    navigating(page, lambda: created.locator("input[type=submit]").click())
    assert f"created_at__range__gte={today - datetime.timedelta(days=1)}" in page.url
    assert page.locator("#result_list tbody tr").count() == len(tokens) + 1  # the replaced one's successor too
    shoot(page, "tokens-created-in-a-range")

    tomorrow = today + datetime.timedelta(days=1)
    page.goto(f"{live_server.url}/admin/tokens/token/?created_at__range__gte={tomorrow}")
    assert page.locator("#result_list tbody tr").count() == 0

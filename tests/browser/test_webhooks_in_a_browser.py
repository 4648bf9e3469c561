"""Webhook endpoints in a real browser (Playwright driving Debian's Chromium against a live server): an
Integrator adds an endpoint, copies its secret from the page that shows it once, and never sees it
again: not on the endpoint's page, not after going back. Then the deliveries of an event to it, each
payload without the person's login and e-mail.

With SCREENSHOTS set, each page is also saved there at 1366×768."""

import pytest
from playwright.sync_api import Error as PlaywrightError

from lifecycle.demo.factories import AccountFactory
from platform_events.webhooks.endpoints import endpoint_secrets
from platform_events.webhooks.models import WebhookSubscription
from tests.browser.conftest import SCREEN, log_in, navigating, needs_chromium, shoot, staff_user

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


def test_an_integrator_adds_an_endpoint_and_sees_its_secret_once(browser, live_server):
    staff_user("integrator1", "Integrator")
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "integrator1")

    page.goto(f"{live_server.url}/admin/platform_events/webhooksubscription/")
    shoot(page, "webhooks-endpoint-list-empty")
    navigating(page, lambda: page.click("a.addlink"))
    page.fill("#id_url", "https://hooks.example.com/lifecycle")
    page.check("input[name=events][value='account.created']")
    page.check("input[name=events][value='account.suspended']")
    page.fill("#id_owner", "billing")
    page.fill("#id_description", "Invoices stop for suspended accounts.")
    shoot(page, "webhooks-add-form")
    navigating(page, lambda: page.click("input[type=submit]"))

    secret = page.input_value("#signing-secret")
    endpoint = WebhookSubscription.objects.get()
    assert endpoint_secrets(endpoint) == [secret]
    assert "Copy the secret now: it is shown this once." in page.locator("#content").inner_text()
    shoot(page, "webhooks-secret-once")

    navigating(page, lambda: page.click("text=I have copied it: go to the endpoint"))
    assert secret not in page.content() and secret.removeprefix("whsec_") not in page.content()
    shoot(page, "webhooks-endpoint-page")
    with pytest.raises(PlaywrightError, match="ERR_CACHE_MISS"):  # not cached: back asks to post again
        page.go_back()

    # The tab is left on Chromium's error page, which may still be navigating: go on in a new one.
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "integrator1")
    AccountFactory.create_batch(3)  # three account.created events, each a delivery to the endpoint
    page.goto(f"{live_server.url}/admin/platform_events/webhooksubscription/")
    shoot(page, "webhooks-endpoint-list")
    page.goto(f"{live_server.url}/admin/platform_events/webhookdelivery/")
    assert page.locator("#result_list tbody tr").count() == 3
    shoot(page, "webhooks-deliveries")

    # A delivery's page: the person's login and e-mail hidden from this role, the rest shown.
    navigating(page, lambda: page.click("#result_list tbody tr:first-child th a"))
    payload = page.locator(".field-payload").inner_text()
    assert '"email": "(hidden: your role does not read accounts)"' in payload and "@" not in payload
    shoot(page, "webhooks-delivery-page")

"""API clients in a real browser (Playwright driving Debian's Chromium against a live server): a
superuser adds a client, copies its key from the page that shows it once and never sees it again;
an Integrator sees who made it and revokes it with a reason; the key stops working at once.

With SCREENSHOTS set, each page is also saved there at 1366×768."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Error as PlaywrightError

from platform_events.api.clients import api_client_by_key, api_client_create
from platform_events.api.models import ApiClient
from platform_events.audit.models import AuditEvent
from tests.browser.conftest import PASSWORD, SCREEN, log_in, navigating, needs_chromium, shoot, staff_user

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


def test_a_superuser_adds_a_client_sees_its_key_once_and_an_integrator_revokes_it(browser, live_server):
    get_user_model().objects.create_superuser("admin1", password=PASSWORD)
    staff_user("integrator1", "Integrator")
    api_client_create(name="crm", scopes=["accounts:read", "accounts:write"], actor=None)  # a list of two
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "admin1")

    page.goto(f"{live_server.url}/admin/platform_events/apiclient/")
    navigating(page, lambda: page.click("a.addlink"))
    page.fill("#id_name", "billing")
    page.check("input[name=scopes][value='accounts:read']")
    page.check("input[name=scopes][value='sessions']")
    shoot(page, "api-clients-add-form")
    navigating(page, lambda: page.click("input[type=submit]"))

    key = page.input_value("#api-key")
    client = ApiClient.objects.get(name="billing")
    assert api_client_by_key(key) == client
    content = page.locator("#content").inner_text()
    assert "Copy the key now: it will never be shown again." in content
    assert f'Authorization: Bearer {key}" "{live_server.url}/api/v1/accounts?login=ada"' in content
    shoot(page, "api-clients-key-shown-once")

    navigating(page, lambda: page.click("text=I have copied it: go to the client"))
    assert key not in page.content() and key[:11] in page.content()
    with pytest.raises(PlaywrightError, match="ERR_CACHE_MISS"):  # not cached: back asks to post again
        page.go_back()

    # The tab is left on Chromium's error page, which may still be navigating: go on in a new one.
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "integrator1")
    page.goto(f"{live_server.url}/admin/platform_events/apiclient/")
    assert page.locator("#result_list tbody tr").count() == 2 and key not in page.content()
    shoot(page, "api-clients-list")
    assert page.locator("a.addlink").count() == 0  # making clients is a superuser's
    navigating(page, lambda: page.click("#result_list >> text=billing"))
    assert "admin1" in page.locator(".field-made_by").inner_text()
    shoot(page, "api-clients-page")
    navigating(page, lambda: page.click(".object-tools >> text=Revoke"))
    page.click("input[type=submit][value=Revoke]")  # no reason: the browser asks for one, nothing is sent
    assert page.locator("#id_reason:invalid").count() == 1
    assert api_client_by_key(key) == client
    page.fill("#id_reason", "Moved to the new billing service.")
    shoot(page, "api-clients-revoke-form")
    navigating(page, lambda: page.click("input[type=submit][value=Revoke]"))

    assert page.locator(".messagelist").inner_text() == "1 client revoked: billing; its key no longer works."
    assert api_client_by_key(key) is None
    assert page.locator("input[name=_save]").count() == 0  # a revoked client's page is read-only
    shoot(page, "api-clients-revoked-page")
    revoked = AuditEvent.objects.get(action="api_client.revoked")
    assert (revoked.actor_display, revoked.reason) == ("integrator1", "Moved to the new billing service.")

    page.goto(f"{live_server.url}/admin/platform_events/apiclient/?revoked=yes")
    assert page.locator("#result_list tbody tr").count() == 1
    assert "Moved to the new billing service." in page.locator("#result_list").inner_text()
    shoot(page, "api-clients-list-revoked")

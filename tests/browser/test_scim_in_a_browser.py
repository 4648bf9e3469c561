"""An identity provider's User in a real browser: Okta creates it through SCIM as active and later
deactivates it; Support opens the account's page and reads which provider it belongs to and as which
userName, that it was activated without an e-mail because the provider vouched for it, and who
suspended it and why; once Okta deletes it, the page says when the provider did."""

import httpx2
import pytest

from platform_events.api.clients import api_client_create
from tests.browser.conftest import SCREEN, log_in, needs_chromium, shoot, staff_user

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def test_support_reads_an_identity_providers_user_on_its_account_page(browser, live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    _, key = api_client_create(name="okta", scopes=["scim"], actor=None)
    with httpx2.Client(base_url=f"{live_server.url}/scim/v2", headers={"Authorization": f"Bearer {key}"}) as okta:
        created = okta.post(
            "/Users",
            json={
                "schemas": [USER],
                "userName": "jane.doe@corp.example",
                "externalId": "00u9f8e7",
                "emails": [{"primary": True, "type": "work", "value": "jane.doe@example.com"}],
                "active": True,
            },
        )
        user_id = created.json()["id"]
        okta.patch(
            f"/Users/{user_id}",
            json={"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": False}}]},
        )
    staff_user("support1", "Support")

    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "support1")
    page.goto(f"{live_server.url}/admin/accounts/account/{user_id}/change/")
    shoot(page, "account-page-scim-user")
    provider = page.locator(".field-identity_provider .readonly").inner_text()
    assert provider.startswith("okta, as jane.doe@corp.example (SCIM, since ")
    assert "00u9f8e7" not in page.content()  # the provider's own id is not shown
    assert page.locator(".field-login .readonly").inner_text() == "jane.doe"
    assert page.locator(".field-status_badge .readonly").inner_text() == "suspended"
    suspension = page.locator(".field-suspension .readonly").inner_text()
    assert "by okta" in suspension and "deactivated by the identity provider" in suspension
    trail = page.locator("#content").inner_text()
    assert "activated by the identity provider, which vouched for the person: no activation e-mail" in trail

    with httpx2.Client(base_url=f"{live_server.url}/scim/v2", headers={"Authorization": f"Bearer {key}"}) as okta:
        assert okta.delete(f"/Users/{user_id}").status_code == 204
    page.reload()
    shoot(page, "account-page-scim-user-deleted")
    provider = page.locator(".field-identity_provider .readonly").inner_text()
    assert "; deleted by the provider on " in provider
    assert page.locator(".field-status_badge .readonly").inner_text() == "deprovisioned"
    page.close()

"""/scim/v2/ against a live server, as identity providers call it: a SCIM client (scim2-client over
httpx2) through every operation, then Okta's and Microsoft Entra ID's own requests, as they send them,
from creation to deletion, with the account as the admin shows it after each step."""

import json
import re

import httpx2
import pytest
from django.urls import reverse
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_models import (
    InvalidFilterException,
    ListResponse,
    NotFoundException,
    PatchOp,
    PatchOperation,
    SearchRequest,
    ServiceProviderConfig,
    UniquenessException,
    User,
)

from accounts.models import Account, AccountStatus, ScimUser
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create
from platform_events.api.models import ApiClient
from tests.lifecycle.scim.test_views import BAD_FILTERS, FILTERS, PAGES
from tests.support import staff_client

pytestmark = pytest.mark.django_db(transaction=True)

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
PASSWORD = "Correct-Horse-9-battery"


@pytest.fixture
def key(live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    return api_client_create(name="okta", scopes=["scim"], actor=None)[1]


@pytest.fixture
def http(live_server, key):
    with httpx2.Client(
        base_url=f"{live_server.url}/scim/v2",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/scim+json"},
    ) as client:
        yield client


@pytest.fixture
def provider(http):
    client = SyncSCIMClient(http)
    client.discover()
    return client


@pytest.fixture
def assert_admin_shows(db):
    """Assert that the account's page in the admin, as Support staff read it, shows each phrase."""
    support = staff_client("Support")

    def check(account_id, *phrases):
        html = support.get(reverse("admin:accounts_account_change", args=[account_id])).content.decode()
        page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
        for phrase in phrases:
            assert phrase in page, f"{phrase!r} not in: {page[page.find('Login:') :][:600]}"

    return check


def test_a_scim_client_goes_through_every_operation(provider, assert_admin_shows):
    assert [rt.endpoint for rt in provider.provider.resource_types] == ["/Users"]
    config = provider.query(ServiceProviderConfig)
    assert config.filter.supported and config.patch.supported and config.etag.supported

    # The User model the client built from the service's schema.
    user_model = provider.get_resource_model("User")
    created = provider.create(
        user_model(
            user_name="ada@example.com",
            external_id="00u-ada",
            emails=[{"value": "ada@example.com", "type": "work", "primary": True}],
            active=True,
            password=PASSWORD,
        )
    )
    assert (created.user_name, created.active, created.external_id, created.password) == (
        "ada@example.com",
        True,
        "00u-ada",
        None,
    )
    with pytest.raises(UniquenessException):
        provider.create(
            user_model(user_name="ADA@example.com", emails=[{"value": "ada2@example.com", "primary": True}])
        )

    found = provider.query(user_model, query_parameters=SearchRequest(filter='userName eq "ada@example.com"'))
    assert isinstance(found, ListResponse) and [u.id for u in found.resources] == [created.id]
    found = provider.query(user_model, query_parameters=SearchRequest(filter='externalId eq "00u-ada"'))
    assert [u.id for u in found.resources] == [created.id]

    created.emails = [{"value": "ada.l@example.com", "type": "work", "primary": True}]
    replaced = provider.replace(created)
    assert replaced.emails[0].value == "ada.l@example.com"

    patched = provider.modify(
        user_model,
        created.id,
        PatchOp[user_model](operations=[PatchOperation[user_model](op="replace", path="active", value=False)]),
    )
    assert patched.active is False
    assert_admin_shows(
        created.id, "Status: suspended", "deactivated by the identity provider", "okta, as ada@example.com"
    )

    provider.delete(user_model, created.id)
    with pytest.raises(NotFoundException):
        provider.query(user_model, created.id)


def test_a_scim_client_filters_and_pages(provider, key):
    """Every filter operator, the page edge cases and bad filters of test_views.py, sent by the client."""
    from tests.lifecycle.scim.conftest import Scim

    people = {
        name: Scim(key, ApiClient.objects.get(name="okta")).owns(account, external_id=external_id)
        for name, account, external_id in (
            ("ada", AccountFactory(active=True, login="ada", email="ada@example.com"), "A-1"),
            ("bob", AccountFactory(active=True, login="bob", email="bob@example.org"), "b-2"),
            ("cy", AccountFactory(suspended=True, login="cy", email="cy@example.com"), None),
        )
    }
    AccountFactory(active=True, login="ann", email="ann@example.com")  # nobody's User
    names = {str(account.pk): name for name, account in people.items()}
    user_model = provider.get_resource_model("User")
    for expression, expected in FILTERS:
        found = provider.query(user_model, query_parameters=SearchRequest(filter=expression))
        assert sorted(names[user.id] for user in found.resources or []) == expected, expression
    for start, count, size, total in PAGES:
        page = provider.query(user_model, query_parameters=SearchRequest(start_index=int(start), count=int(count)))
        assert (len(page.resources or []), page.total_results) == (size, total), (start, count)
    for expression in BAD_FILTERS:
        # Built unchecked: the client would refuse to send what it cannot parse itself.
        with pytest.raises(InvalidFilterException):
            provider.query(user_model, query_parameters=SearchRequest.model_construct(filter=expression))


def test_bad_bodies_sent_to_the_live_server_are_each_the_right_scim_error(http):
    """test_views.py's bad bodies and PATCHes, over HTTP: each its status and scimType, nothing made."""
    from tests.lifecycle.scim.test_views import BAD_BODIES, BAD_PATCHES

    for sent, status, scim_type, detail in BAD_BODIES:
        answer = http.post("/Users", content=sent if isinstance(sent, str) else json.dumps(sent))
        assert (answer.status_code, answer.json().get("scimType")) == (status, scim_type), sent
        assert detail in answer.json()["detail"]
    user_id = http.post(
        "/Users", json={"schemas": [USER], "userName": "ann", "emails": [{"value": "a@x.example"}]}
    ).json()["id"]
    for operation, scim_type, detail in BAD_PATCHES:
        answer = http.patch(f"/Users/{user_id}", json={"schemas": [PATCH], "Operations": [operation]})
        assert (answer.status_code, answer.json().get("scimType")) == (400, scim_type), operation
        assert detail in answer.json()["detail"]
    assert Account.objects.count() == 1


def test_an_unknown_user_is_a_scim_error_the_client_reads(provider):
    with pytest.raises(NotFoundException, match="There is no User '999999'"):
        provider.query(User, "999999")


def test_okta_from_import_to_deactivation_and_back(http, assert_admin_shows):
    """Okta's SCIM 2.0 test plan: it reads a page, looks the user up before creating it, creates it with
    a password, reads it, replaces it whole, deactivates it with a path-less replace, reactivates it;
    Okta deactivates rather than deletes."""
    AccountFactory(active=True, login="someone", email="someone@example.com")  # nobody's User: never listed
    page = http.get("/Users", params={"count": 1, "startIndex": 1}).json()
    assert (page["totalResults"], page["Resources"]) == (0, [])
    lookup = http.get("/Users", params={"filter": 'userName eq "ann@example.com"', "startIndex": 1, "count": 100})
    assert lookup.status_code == 200 and lookup.headers["Content-Type"] == "application/scim+json"
    assert (lookup.json()["totalResults"], lookup.json()["Resources"]) == (0, [])

    sent = {
        "schemas": [USER],
        "userName": "ann@example.com",
        "name": {"givenName": "Ann", "familyName": "Lee"},
        "emails": [{"primary": True, "value": "ann@example.com", "type": "work"}],
        "displayName": "Ann Lee",
        "locale": "en-US",
        "externalId": "00u1b2c3",
        "groups": [],
        "password": PASSWORD,
        "active": True,
    }
    created = http.post("/Users", json=sent)
    assert created.status_code == 201, created.text
    user = created.json()
    assert created.headers["Location"] == user["meta"]["location"]
    assert (user["userName"], user["active"]) == ("ann@example.com", True)
    assert "password" not in user and PASSWORD not in created.text
    assert_admin_shows(user["id"], "Login: ann", "Status: active", "okta, as ann@example.com", "Password: set 20")

    read = http.get(f"/Users/{user['id']}")
    assert read.json()["id"] == user["id"] and read.headers["ETag"] == user["meta"]["version"]

    replaced = http.put(f"/Users/{user['id']}", json={**sent, "id": user["id"], "name": {"givenName": "Annie"}})
    assert replaced.status_code == 200 and replaced.json()["userName"] == "ann@example.com"

    deactivated = http.patch(
        f"/Users/{user['id']}", json={"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": False}}]}
    )
    assert deactivated.status_code == 200 and deactivated.json()["active"] is False
    assert_admin_shows(user["id"], "Status: suspended", "deactivated by the identity provider")

    reactivated = http.patch(
        f"/Users/{user['id']}", json={"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": True}}]}
    )
    assert reactivated.json()["active"] is True
    assert_admin_shows(user["id"], "Status: active", "okta, as ann@example.com")

    missing = http.get("/Users/010101")
    assert missing.status_code == 404
    assert missing.json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert missing.json()["status"] == "404"

    assert http.delete(f"/Users/{user['id']}").status_code == 204
    assert_admin_shows(user["id"], "Status: deprovisioned", "deleted by the identity provider")


def test_entra_id_from_creation_to_deletion(http, assert_admin_shows):
    """Microsoft Entra ID: a look-up by userName, a creation with externalId and the enterprise
    extension, PATCHes with capitalised ops, "False" as a string and a path filter on emails, then a
    DELETE that expects 204."""
    lookup = http.get("/Users", params={"filter": 'userName eq "bo@contoso.example"'})
    assert lookup.json()["totalResults"] == 0

    created = http.post(
        "/Users",
        json={
            "schemas": [USER, ENTERPRISE],
            "externalId": "bo",
            "userName": "bo@contoso.example",
            "active": True,
            "displayName": "Bo Ek",
            "emails": [{"primary": True, "type": "work", "value": "bo@contoso.example"}],
            "meta": {"resourceType": "User"},
            "name": {"formatted": "Bo Ek", "familyName": "Ek", "givenName": "Bo"},
            "roles": [],
            ENTERPRISE: {"department": "Finance", "employeeNumber": "7"},
        },
    )
    assert created.status_code == 201, created.text
    user_id = created.json()["id"]
    assert ENTERPRISE not in created.json()  # accepted, not kept
    assert_admin_shows(user_id, "Status: active", "as bo@contoso.example")

    def patch(*operations):
        answer = http.patch(f"/Users/{user_id}", json={"schemas": [PATCH], "Operations": list(operations)})
        assert answer.status_code == 200, answer.text
        return answer.json()

    assert patch({"op": "Replace", "path": "active", "value": "False"})["active"] is False
    assert_admin_shows(user_id, "Status: suspended", "deactivated by the identity provider")

    changed = patch(
        {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "bo.ek@contoso.example"},
        {"op": "Add", "path": "displayName", "value": "Bo E."},
        {"op": "Replace", "path": f"{ENTERPRISE}:department", "value": "Sales"},
        {"op": "Replace", "path": "externalId", "value": "bo-2"},
    )
    assert changed["emails"] == [{"value": "bo.ek@contoso.example", "type": "work", "primary": True}]
    assert changed["externalId"] == "bo-2"
    assert_admin_shows(user_id, "Email: bo.ek@contoso.example")

    assert patch({"op": "Replace", "path": "active", "value": "True"})["active"] is True
    assert_admin_shows(user_id, "Status: active")
    found = http.get("/Users", params={"filter": 'externalId eq "bo-2"'}).json()
    assert [u["id"] for u in found["Resources"]] == [user_id]

    deleted = http.delete(f"/Users/{user_id}")
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert_admin_shows(user_id, "Status: deprovisioned", "deleted by the identity provider")
    assert ScimUser.objects.get(account_id=user_id).account.status == AccountStatus.DEPROVISIONED

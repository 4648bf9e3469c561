"""/scim/v2/ (lifecycle/scim/views.py): the discovery endpoints and reading Users, as an identity
provider's client calls them."""

import pytest

from accounts.services import account_deprovision
from lifecycle.demo.factories import AccountFactory

pytestmark = pytest.mark.django_db

USER = "urn:ietf:params:scim:schemas:core:2.0:User"


def body(response) -> dict:
    assert response["Content-Type"] == "application/scim+json", response.content
    return response.json()


def error(response, status: int, scim_type: str | None = None) -> str:
    answer = body(response)
    assert response.status_code == status, answer
    assert answer["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert answer["status"] == str(status) and answer.get("scimType") == scim_type, answer
    return answer["detail"]


# Discovery


def test_the_service_provider_config_says_what_is_supported(scim, settings):
    config = body(scim.get("/ServiceProviderConfig"))
    assert config["filter"] == {"supported": True, "maxResults": 200}
    for feature in ("patch", "etag", "changePassword"):
        assert config[feature]["supported"] is True, feature
    for feature in ("bulk", "sort"):
        assert config[feature]["supported"] is False, feature
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    assert config["meta"]["location"] == f"{settings.PUBLIC_BASE_URL}/scim/v2/ServiceProviderConfig"


def test_the_resource_types_and_schemas_describe_users(scim):
    types = body(scim.get("/ResourceTypes"))
    assert types["totalResults"] == 1 and types["Resources"][0]["endpoint"] == "/Users"
    assert types["Resources"][0]["schema"] == USER
    assert body(scim.get("/ResourceTypes/User"))["id"] == "User"
    schema = body(scim.get(f"/Schemas/{USER}"))
    # What the mapping keeps, not the attributes it accepts and drops (name, phoneNumbers, ...).
    assert schema["id"] == USER and {a["name"] for a in schema["attributes"]} == {
        "userName",
        "emails",
        "active",
        "password",
    }
    assert body(scim.get("/Schemas"))["Resources"][0]["id"] == USER
    error(scim.get("/ResourceTypes/Group"), 404)
    error(scim.get("/Schemas/urn:nope"), 404)


# Reading Users


def test_a_user_is_the_account_as_the_mapping_says(scim, settings):
    account = scim.owns(
        AccountFactory(active=True, login="ada", email="Ada@Example.com"), "Ada@Corp.Example", external_id="00u-1"
    )
    response = scim.get(f"/Users/{account.pk}")
    user = body(response)
    assert user["schemas"] == [USER] and user["id"] == str(account.pk)
    assert (user["userName"], user["externalId"], user["active"]) == ("Ada@Corp.Example", "00u-1", True)
    assert "password" not in user
    # scim2-models writes the domain in lower case, as domains are (the local part as it is).
    assert user["emails"] == [{"value": "Ada@example.com", "type": "work", "primary": True}]
    assert user["meta"]["resourceType"] == "User"
    assert user["meta"]["location"] == f"{settings.PUBLIC_BASE_URL}/scim/v2/Users/{account.pk}"
    assert response["ETag"] == user["meta"]["version"] and user["meta"]["version"].startswith('W/"')


@pytest.mark.parametrize(("traits", "active"), [({}, False), ({"suspended": True}, False), ({"active": True}, True)])
def test_active_is_true_for_an_active_account_only(scim, traits, active):
    account = scim.owns(AccountFactory(**traits))
    assert body(scim.get(f"/Users/{account.pk}"))["active"] is active


def test_a_deprovisioned_erased_or_unknown_account_is_a_scim_404(scim):
    gone = scim.owns(AccountFactory(active=True))
    account_deprovision(account=gone, actor=None)
    erased = AccountFactory(erased=True)
    for user_id in (str(gone.pk), str(erased.pk), "999999", "abc", "9" * 40):
        assert "There is no User" in error(scim.get(f"/Users/{user_id}"), 404)


def test_the_version_changes_when_the_user_does(scim):
    from accounts.services import account_suspend

    account = scim.owns(AccountFactory(active=True))
    before = scim.get(f"/Users/{account.pk}")["ETag"]
    account_suspend(account=account, actor=None)
    assert scim.get(f"/Users/{account.pk}")["ETag"] != before


def test_attributes_and_excluded_attributes_select_what_is_returned(scim):
    account = scim.owns(AccountFactory(active=True, login="ada"))
    assert body(scim.get(f"/Users/{account.pk}", attributes="userName")) == {
        "schemas": [USER],
        "id": str(account.pk),
        "userName": "ada",
    }
    assert "emails" not in body(scim.get(f"/Users/{account.pk}", excludedAttributes="emails"))


# Lists, filters and pages


def ids(response) -> list[str]:
    return [user["id"] for user in body(response)["Resources"]]


@pytest.fixture
def people(scim):
    """Three Users of the client, and an account that is nobody's User, which no filter finds."""
    AccountFactory(active=True, login="ann", email="ann@example.com")
    return {
        "ada": scim.owns(AccountFactory(active=True, login="ada", email="ada@example.com"), external_id="A-1"),
        "bob": scim.owns(AccountFactory(active=True, login="bob", email="bob@example.org"), external_id="b-2"),
        "cy": scim.owns(AccountFactory(suspended=True, login="cy", email="cy@example.com")),
    }


# Each operator, as docs/scim.md lists them, on the people below (also sent by a SCIM client to a live
# server: tests/lifecycle/scim/test_scim_client.py).
FILTERS = [
    ('userName eq "ADA"', ["ada"]),
    ('userName ne "ada"', ["bob", "cy"]),
    ('userName co "o"', ["bob"]),
    ('userName sw "c"', ["cy"]),
    ('userName ew "a"', ["ada"]),
    ('emails.value eq "BOB@example.org"', ["bob"]),
    ('emails eq "cy@example.com"', ["cy"]),
    ('emails[type eq "work" and value ew "example.com"]', ["ada", "cy"]),
    ('emails[value co "example.org"]', ["bob"]),
    ("active eq true", ["ada", "bob"]),
    ("active eq false", ["cy"]),
    ('userName eq "ada" or userName eq "cy"', ["ada", "cy"]),
    ('not (userName eq "ada")', ["bob", "cy"]),
    ('active eq true and not (emails.value ew ".org")', ["ada"]),
    ("userName pr", ["ada", "bob", "cy"]),
    ("externalId pr", ["ada", "bob"]),
    ('externalId eq "A-1"', ["ada"]),
    ('externalId eq "a-1"', []),
    ('externalId ne "A-1"', ["bob", "cy"]),
    ('externalId sw "b"', ["bob"]),
    ('nickName eq "x"', []),
    ('meta.created gt "2000-01-01T00:00:00Z"', ["ada", "bob", "cy"]),
    ('meta.lastModified lt "2000-01-01T00:00:00Z"', []),
    ('meta.created ge "2000-01-01T00:00:00Z" and meta.created le "2999-01-01T00:00:00Z"', ["ada", "bob", "cy"]),
    ('meta.lastModified gt "2999-01-01T00:00:00Z"', []),
]


@pytest.mark.parametrize(("expression", "expected"), FILTERS)
def test_the_filter_operators(scim, people, expression, expected):
    names = {str(account.pk): name for name, account in people.items()}
    assert sorted(names[i] for i in ids(scim.get("/Users", filter=expression))) == expected


def test_okta_asks_for_a_user_that_does_not_exist_yet_and_gets_an_empty_list(scim, people):
    answer = body(scim.get("/Users", filter='userName eq "ann@example.com"', startIndex="1", count="100"))
    assert (answer["totalResults"], answer["Resources"], answer["startIndex"]) == (0, [], 1)


# startIndex, count, and the page's size and the total that answer them.
PAGES = [("1", "1", 1, 3), ("2", "2", 2, 3), ("0", "2", 2, 3), ("-5", "1", 1, 3), ("10", "5", 0, 3), ("1", "0", 0, 3)]


@pytest.mark.parametrize(("start", "count", "expected", "total"), PAGES)
def test_pages(scim, people, start, count, expected, total):
    answer = body(scim.get("/Users", startIndex=start, count=count))
    assert (answer["itemsPerPage"], answer["totalResults"], len(answer["Resources"])) == (expected, total, expected)
    assert answer["startIndex"] == max(int(start), 1)


def test_a_page_holds_at_most_the_announced_number(scim, people):
    assert body(scim.get("/Users", count="100000"))["itemsPerPage"] == 3


BAD_FILTERS = ["userName eq", 'userName xx "a"', "(((", 'active eq "yes"', 'meta.created gt "yesterday"', "x" * 1001]


@pytest.mark.parametrize("expression", BAD_FILTERS)
def test_a_filter_that_cannot_be_read_is_invalid_filter(scim, people, expression):
    error(scim.get("/Users", filter=expression), 400, "invalidFilter")


def test_a_filter_built_to_be_slow_is_refused(scim, people):
    expression = " or ".join(f'userName co "{n}"' for n in range(30))
    assert "at most 20 expressions" in error(scim.get("/Users", filter=expression), 400, "invalidFilter")


@pytest.mark.parametrize(("name", "value"), [("startIndex", "one"), ("count", "1.5")])
def test_a_page_number_that_is_not_a_number_is_invalid_value(scim, name, value):
    error(scim.get("/Users", **{name: value}), 400, "invalidValue")


# Who may


def test_without_a_key_or_with_a_wrong_one_it_is_a_scim_401(db):
    from django.test import Client

    missing = Client().get("/scim/v2/Users")
    assert "Bearer" in error(missing, 401) and missing["WWW-Authenticate"] == 'Bearer realm="scim"'
    wrong = Client().get("/scim/v2/Users", HTTP_AUTHORIZATION="Bearer nope")
    assert "wrong, or the client was revoked" in error(wrong, 401)


def test_a_client_without_the_scope_is_a_scim_403(make_scim):
    reader = make_scim("accounts:read", "accounts:write")
    assert "needs the scope scim" in error(reader.get("/Users"), 403)


@pytest.mark.parametrize("path", ["/Groups", "/Groups/1", "/Bulk", "/Users/.search", "/Me"])
def test_what_the_service_does_not_serve_is_a_scim_404(scim, path):
    assert "it serves Users" in error(scim.get(path), 404)
    assert "it serves Users" in error(scim.send("POST", path, {}), 404)


def test_a_method_the_endpoint_does_not_answer_is_a_scim_405(scim):
    error(scim.send("DELETE", "/ServiceProviderConfig"), 405)


# Deleting Users


def test_delete_deprovisions_the_account_as_the_client_and_the_user_is_gone(scim):
    from accounts.models import AccountStatus
    from platform_events.audit.models import AuditEvent

    account = scim.owns(AccountFactory(active=True))
    response = scim.send("DELETE", f"/Users/{account.pk}")
    assert response.status_code == 204 and response.content == b""
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED
    audit = AuditEvent.objects.get(action="account.deprovisioned", resource_id=str(account.pk))
    assert audit.reason == "deleted by the identity provider" and audit.actor_id.startswith("api-client:")
    error(scim.get(f"/Users/{account.pk}"), 404)
    error(scim.send("DELETE", f"/Users/{account.pk}"), 404)


def test_a_deletion_answers_204_with_no_body_and_no_type(scim):
    account = scim.owns(AccountFactory(active=True))
    response = scim.send("DELETE", f"/Users/{account.pk}")
    assert (response.status_code, response.content, response.get("Content-Type")) == (204, b"", None)


def test_delete_of_an_unknown_user_is_a_scim_404(scim):
    error(scim.send("DELETE", "/Users/999999"), 404)


def test_a_client_without_the_scope_deletes_nothing(scim, make_scim):
    from accounts.models import AccountStatus

    account = scim.owns(AccountFactory(active=True))
    error(make_scim("accounts:read", "accounts:delete").send("DELETE", f"/Users/{account.pk}"), 403)
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE


# Creating and changing Users


def new_user(**fields) -> dict:
    return {
        "schemas": [USER],
        "userName": "ann@example.com",
        "emails": [{"value": "ann@example.com", "type": "work", "primary": True}],
        "active": True,
        **fields,
    }


def patch_body(*operations) -> dict:
    return {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": list(operations)}


def test_post_creates_a_user_201_with_its_location_and_version(scim, settings):
    response = scim.send("POST", "/Users", new_user(externalId="00u-1"))
    user = body(response)
    assert response.status_code == 201
    assert response["Location"] == f"{settings.PUBLIC_BASE_URL}/scim/v2/Users/{user['id']}"
    assert response["ETag"] == user["meta"]["version"]
    assert (user["userName"], user["externalId"], user["active"]) == ("ann@example.com", "00u-1", True)


def test_put_replaces_and_patch_changes_the_user_each_answering_it(scim):
    user_id = body(scim.send("POST", "/Users", new_user()))["id"]
    replaced = scim.send("PUT", f"/Users/{user_id}", new_user(userName="ann.lee", externalId="x"))
    assert replaced.status_code == 200 and body(replaced)["userName"] == "ann.lee"
    patched = scim.send("PATCH", f"/Users/{user_id}", patch_body({"op": "remove", "path": "externalId"}))
    assert patched.status_code == 200 and "externalId" not in body(patched)
    assert patched["ETag"] == body(patched)["meta"]["version"] != replaced["ETag"]


def test_a_path_less_patch_naming_paths_as_keys_applies_each_of_them(scim):
    """Entra ID's form: the address in the value's keys, beside plain attributes."""
    user_id = body(scim.send("POST", "/Users", new_user()))["id"]
    answer = scim.send(
        "PATCH",
        f"/Users/{user_id}",
        patch_body(
            {
                "op": "Replace",
                "value": {
                    'emails[type eq "work"].value': "erin.x@example.com",
                    "userName": "erin2@example.com",
                    "externalId": "erin-2",
                },
            }
        ),
    )
    user = body(answer)
    assert (user["userName"], user["externalId"], user["emails"][0]["value"]) == (
        "erin2@example.com",
        "erin-2",
        "erin.x@example.com",
    )


def test_a_patch_removing_the_password_removes_it(scim):
    from accounts.models import AccountPassword

    user_id = body(scim.send("POST", "/Users", new_user(password="Correct-Horse-9-battery")))["id"]
    assert AccountPassword.objects.filter(account_id=user_id).exists()
    assert scim.send("PATCH", f"/Users/{user_id}", patch_body({"op": "remove", "path": "password"})).status_code == 200
    assert not AccountPassword.objects.filter(account_id=user_id).exists()


def test_a_user_deleted_and_created_again_without_a_password_has_none(scim):
    from accounts.models import AccountPassword

    user_id = body(scim.send("POST", "/Users", new_user(password="Correct-Horse-9-battery")))["id"]
    scim.send("DELETE", f"/Users/{user_id}")
    again = body(scim.send("POST", "/Users", new_user()))
    assert again["id"] == user_id and not AccountPassword.objects.filter(account_id=user_id).exists()


def test_if_match_with_an_old_version_is_412_and_changes_nothing(scim):
    created = scim.send("POST", "/Users", new_user())
    user_id, old = body(created)["id"], created["ETag"]
    scim.send("PATCH", f"/Users/{user_id}", patch_body({"op": "add", "path": "externalId", "value": "e1"}))
    error(scim.send("PUT", f"/Users/{user_id}", new_user(active=False), HTTP_IF_MATCH=old), 412)
    error(
        scim.send(
            "PATCH",
            f"/Users/{user_id}",
            patch_body({"op": "replace", "path": "active", "value": False}),
            HTTP_IF_MATCH=old,
        ),
        412,
    )
    assert body(scim.get(f"/Users/{user_id}"))["active"] is True
    current = scim.get(f"/Users/{user_id}")["ETag"]
    ok = scim.send(
        "PATCH",
        f"/Users/{user_id}",
        patch_body({"op": "replace", "path": "active", "value": False}),
        HTTP_IF_MATCH=current,
    )
    assert ok.status_code == 200 and body(ok)["active"] is False


# Bodies that cannot be a User: the status, scimType and a phrase of the detail that answer each.
BAD_BODIES = [
    ("{not json", 400, "invalidSyntax", "not JSON"),
    ("[1, 2]", 400, "invalidSyntax", "a JSON object"),
    ({"schemas": ["urn:example:User"], "userName": "ann"}, 400, "invalidSyntax", "schemas"),
    ({"schemas": [USER]}, 400, "invalidValue", "userName"),
    ({"schemas": [USER], "userName": ["ann"]}, 400, "invalidValue", "userName"),
    ({"schemas": [USER], "userName": "ann", "active": "maybe"}, 400, "invalidValue", "active"),
    ({"schemas": [USER], "userName": "ann"}, 400, "invalidValue", "needs its address"),
    (
        {"schemas": [USER], "userName": "ann", "emails": [{"value": "a@x.example", "primary": True}] * 2},
        400,
        "invalidValue",
        "primary",
    ),
    (
        {"schemas": [USER], "userName": "ann", "emails": [{"value": "zoë@example.com"}]},
        400,
        "invalidValue",
        "ASCII",
    ),
    (
        {"schemas": [USER], "userName": "ann\u0007", "emails": [{"value": "a@x.example"}]},
        400,
        "invalidValue",
        "control",
    ),
    (
        {"schemas": [USER], "userName": "ann", "emails": [{"value": "a@x.example"}], "password": "abc"},
        400,
        "invalidValue",
        "password: This password is too short",
    ),
]


@pytest.mark.parametrize(("sent", "status", "scim_type", "detail"), BAD_BODIES)
def test_a_body_that_cannot_be_a_user_is_the_right_scim_error_and_makes_nothing(scim, sent, status, scim_type, detail):
    from accounts.models import Account

    assert detail in error(scim.send("POST", "/Users", sent), status, scim_type)
    assert not Account.objects.exists()


def test_a_user_name_taken_is_409_uniqueness(scim):
    scim.send("POST", "/Users", new_user())
    assert "already taken" in error(scim.send("POST", "/Users", new_user(emails=None)), 409, "uniqueness")


def test_a_body_of_another_type_is_415(scim):
    response = scim.client.post(
        "/scim/v2/Users", "userName=ann", content_type="text/plain", HTTP_AUTHORIZATION=f"Bearer {scim.key}"
    )
    error(response, 415)


# PATCH operations a User cannot take: the scimType and a phrase of the detail of each 400.
BAD_PATCHES = [
    ({"op": "replace", "path": "id", "value": "1"}, "mutability", "read-only"),
    ({"op": "replace", "path": "meta.created", "value": "2000-01-01T00:00:00Z"}, "mutability", "read-only"),
    ({"op": "replace", "value": {"id": "1"}}, "mutability", "read-only"),
    ({"op": "remove", "path": "userName"}, "mutability", "cannot be removed"),
    ({"op": "frob", "path": "active"}, "invalidValue", "not a PATCH operation"),
    ({"op": "replace", "path": "emails[type eq", "value": "x"}, "invalidPath", "syntax"),
    ({"op": "remove", "path": "emails"}, "invalidValue", "needs its address"),
    ({"op": "replace", "path": 'emails[type eq "work"].value', "value": "bad"}, "invalidValue", "email"),
]


@pytest.mark.parametrize(("operation", "scim_type", "detail"), BAD_PATCHES)
def test_a_patch_the_user_cannot_take_is_the_right_scim_error_and_changes_nothing(scim, operation, scim_type, detail):
    created = scim.send("POST", "/Users", new_user(userName="ann"))
    user_id, version = body(created)["id"], created["ETag"]
    answer = scim.send("PATCH", f"/Users/{user_id}", patch_body(operation))
    assert detail in error(answer, 400, scim_type)
    assert scim.get(f"/Users/{user_id}")["ETag"] == version

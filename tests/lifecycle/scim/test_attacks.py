"""/scim/v2/ attacked: as another identity provider, as a client without the scope or revoked, with
bodies and filters built to hurt, and for the password an identity provider sends. Each attack
leaves the data as it was."""

import json
import logging

import pytest

from accounts.models import Account, AccountStatus, ScimUser
from lifecycle.demo.factories import AccountFactory
from lifecycle.scim.views import MAX_BODY_BYTES
from platform_events.api.clients import api_client_revoke
from platform_events.audit.models import AuditEvent
from tests.lifecycle.scim.test_views import USER, body, error, new_user, patch_body

pytestmark = pytest.mark.django_db

PASSWORD = "Correct-Horse-9-battery"


@pytest.fixture
def okta(make_scim):
    return make_scim("scim")


@pytest.fixture
def entra(make_scim):
    return make_scim("scim")


@pytest.fixture
def ann(okta):
    return body(okta.send("POST", "/Users", new_user(externalId="00u-ann")))


def state(user_id) -> tuple:
    account = Account.objects.select_related("scim_user").get(pk=user_id)
    return account.status, account.email, account.login, account.scim_user.user_name, account.scim_user.external_id


# Another identity provider


def test_another_client_neither_finds_nor_changes_nor_deletes_a_user(okta, entra, ann):
    before = state(ann["id"])
    error(entra.get(f"/Users/{ann['id']}"), 404)
    for expression in (
        f'id eq "{ann["id"]}"',
        'userName eq "ann@example.com"',
        'externalId eq "00u-ann"',
        "userName pr",
    ):
        assert body(entra.get("/Users", filter=expression))["totalResults"] == 0
    error(entra.send("PUT", f"/Users/{ann['id']}", new_user(active=False)), 404)
    error(
        entra.send("PATCH", f"/Users/{ann['id']}", patch_body({"op": "replace", "path": "active", "value": False})), 404
    )
    error(entra.send("DELETE", f"/Users/{ann['id']}"), 404)
    assert state(ann["id"]) == before


def test_another_client_cannot_take_a_user_name_or_an_address_away(okta, entra, ann):
    assert "already taken" in error(entra.send("POST", "/Users", new_user(emails=None)), 409, "uniqueness")
    mine = body(entra.send("POST", "/Users", new_user(userName="bo", emails=[{"value": "bo@example.com"}])))
    renamed = entra.send(
        "PUT", f"/Users/{mine['id']}", new_user(userName="ANN@example.com", emails=[{"value": "bo@example.com"}])
    )
    error(renamed, 409, "uniqueness")
    moved = entra.send(
        "PATCH",
        f"/Users/{mine['id']}",
        patch_body({"op": "replace", "path": "emails", "value": [{"value": "ann@example.com", "primary": True}]}),
    )
    assert "already claimed" in error(moved, 409, "uniqueness")
    assert state(mine["id"])[1:4] == ("bo@example.com", "bo", "bo")


def test_a_client_cannot_take_over_an_account_it_did_not_create(okta):
    staff_made = AccountFactory(active=True, login="bob", email="bob@example.com")
    error(okta.get(f"/Users/{staff_made.pk}"), 404)
    error(okta.send("DELETE", f"/Users/{staff_made.pk}"), 404)
    error(
        okta.send("PATCH", f"/Users/{staff_made.pk}", patch_body({"op": "replace", "path": "active", "value": False})),
        404,
    )
    assert "Login is already taken" in error(
        okta.send(
            "POST",
            "/Users",
            new_user(userName="BOB", emails=None, active=None) | {"emails": [{"value": "b2@example.com"}]},
        ),
        409,
        "uniqueness",
    )
    assert "already claimed" in error(
        okta.send("POST", "/Users", new_user(userName="bob2", emails=[{"value": "bob@example.com"}], active=None)),
        409,
        "uniqueness",
    )
    staff_made.refresh_from_db()
    assert (staff_made.status, staff_made.login, staff_made.email) == (AccountStatus.ACTIVE, "bob", "bob@example.com")
    assert not ScimUser.objects.filter(account=staff_made).exists()


# Without the right to


@pytest.mark.parametrize("scopes", [("accounts:read", "accounts:write"), ("accounts:read", "accounts:delete")])
def test_a_client_without_the_scope_writes_nothing(make_scim, okta, ann, scopes):
    before = state(ann["id"])
    other = make_scim(*scopes)
    assert "needs the scope scim" in error(
        other.send("POST", "/Users", new_user(userName="eve", emails=[{"value": "eve@example.com"}])), 403
    )
    error(other.send("PUT", f"/Users/{ann['id']}", new_user(active=False)), 403)
    error(
        other.send("PATCH", f"/Users/{ann['id']}", patch_body({"op": "replace", "path": "active", "value": False})), 403
    )
    assert state(ann["id"]) == before and Account.objects.count() == 1


def test_a_revoked_client_is_401_and_its_users_stay(okta, ann):
    api_client_revoke(client=okta.api_client, reason="moved to another identity provider", actor=None)
    error(
        okta.send("PATCH", f"/Users/{ann['id']}", patch_body({"op": "replace", "path": "active", "value": False})), 401
    )
    assert state(ann["id"])[0] == AccountStatus.ACTIVE


def test_the_rate_limit_counts_scim_requests(okta, settings):
    settings.API_REQUESTS_PER_MINUTE = 2
    okta.get("/Users")
    okta.get("/Users")
    response = okta.send("POST", "/Users", new_user())
    assert "2 requests a minute" in error(response, 429) and int(response["Retry-After"]) > 0
    assert not Account.objects.exists()


# Bodies and filters built to hurt


def test_an_oversized_body_is_413_before_it_is_read(okta):
    padding = "x" * MAX_BODY_BYTES
    error(okta.send("POST", "/Users", new_user(displayName=padding)), 413)
    assert not Account.objects.exists()


def test_an_oversized_patch_is_413_and_changes_nothing(okta, ann):
    before = state(ann["id"])
    operations = [{"op": "add", "path": "displayName", "value": "x" * 1000}] * (MAX_BODY_BYTES // 1000 + 1)
    error(okta.send("PATCH", f"/Users/{ann['id']}", patch_body(*operations)), 413)
    assert state(ann["id"]) == before


def test_a_deeply_nested_body_is_refused_not_a_500(okta):
    nested = "[" * 100_000 + "]" * 100_000
    error(okta.send("POST", "/Users", nested), 413)
    deep = json.dumps(new_user())[:-1] + ', "name": ' + "{" * 5000 + "}" * 5000 + "}"
    assert okta.send("POST", "/Users", deep).status_code in (400, 413)
    assert not Account.objects.exists()


def test_a_patch_of_read_only_attributes_is_mutability_and_changes_nothing(okta, ann):
    version = okta.get(f"/Users/{ann['id']}")["ETag"]
    for operation in (
        {"op": "replace", "path": "id", "value": "1"},
        {"op": "add", "path": "meta.lastModified", "value": "2000-01-01T00:00:00Z"},
        {"op": "replace", "value": {"meta": {"version": 'W/"x"'}, "active": False}},
    ):
        error(okta.send("PATCH", f"/Users/{ann['id']}", patch_body(operation)), 400, "mutability")
    assert okta.get(f"/Users/{ann['id']}")["ETag"] == version


def test_a_put_naming_another_id_changes_only_the_user_in_the_path(okta, ann):
    other = body(okta.send("POST", "/Users", new_user(userName="bo", emails=[{"value": "bo@example.com"}])))
    okta.send("PUT", f"/Users/{ann['id']}", new_user(id=other["id"], externalId="changed"))
    assert state(ann["id"])[4] == "changed" and state(other["id"])[4] is None


@pytest.mark.parametrize(
    "expression",
    [
        'userName eq "x\\" or 1=1 --"',
        'userName eq "\'; DROP TABLE accounts; --"',
        'emails[value co "%"]',
        'userName sw "_"',
    ],
)
def test_a_filter_with_sql_or_wildcards_in_it_finds_nothing_it_should_not(okta, ann, expression):
    assert body(okta.get("/Users", filter=expression))["totalResults"] == 0
    assert Account.objects.count() == 1


def test_co_on_every_attribute_is_answered_within_its_bounds(okta, ann):
    every = " or ".join(
        f'{name} co "a"' for name in ("userName", "emails.value", "externalId", "emails.type", "name.givenName")
    )
    assert body(okta.get("/Users", filter=" or ".join([every] * 4)))["totalResults"] == 1
    error(okta.get("/Users", filter=" or ".join([every] * 5)), 400, "invalidFilter")


# The password an identity provider sends


def test_a_password_sent_is_never_answered_logged_or_in_the_trail(okta, caplog):
    caplog.set_level(logging.DEBUG)
    created = okta.send("POST", "/Users", new_user(password=PASSWORD))
    user_id = body(created)["id"]
    patched = okta.send(
        "PATCH", f"/Users/{user_id}", patch_body({"op": "replace", "path": "password", "value": PASSWORD + "x"})
    )
    refused = okta.send("PUT", f"/Users/{user_id}", new_user(password="short1"))
    error(refused, 400, "invalidValue")
    for response in (
        created,
        patched,
        refused,
        okta.get(f"/Users/{user_id}"),
        okta.get("/Users", attributes="password"),
    ):
        assert PASSWORD not in response.content.decode() and "short1" not in response.content.decode()
        answer = body(response)
        assert all("password" not in user for user in answer.get("Resources", [answer]))
    assert PASSWORD not in caplog.text and "short1" not in caplog.text
    trail = json.dumps(list(AuditEvent.objects.values_list("diff_before", "diff_after", "reason")))
    assert PASSWORD not in trail and "short1" not in trail
    assert AuditEvent.objects.filter(resource_id=user_id, action="account.password_set").count() == 2


def test_a_filter_on_the_password_matches_nothing(okta):
    okta.send("POST", "/Users", new_user(password=PASSWORD))
    assert body(okta.get("/Users", filter=f'password eq "{PASSWORD}"'))["totalResults"] == 0
    assert body(okta.get("/Users", filter="password pr"))["totalResults"] == 0


def test_a_user_schema_with_unknown_attributes_keeps_none_of_them(okta):
    created = body(okta.send("POST", "/Users", new_user(**{"urn:evil:ext": {"admin": True}, "isAdmin": True})))
    assert set(created) == {"schemas", "id", "meta", "userName", "active", "emails"}
    assert created["schemas"] == [USER]

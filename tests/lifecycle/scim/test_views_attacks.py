"""/scim/v2/ attacked: as another identity provider, as a client without the scope or revoked, with
bodies and filters built to hurt, and for the password an identity provider sends. Each attack
leaves the data as it was."""

import json
import logging

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.urls import reverse

from accounts.models import Account, AccountStatus, ScimUser
from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from lifecycle.scim.views import MAX_BODY_BYTES
from platform_events.api.clients import api_client_revoke
from platform_events.audit.models import AuditEvent
from tests.lifecycle.scim.test_views import USER, body, error, new_user, patch_body
from tests.support import NEW_PASSWORD, run_queued_tasks
from tokens.links import landing_path
from tokens.models import TokenAction
from tokens.selectors import live_token

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

PASSWORD = "Correct-Horse-9-battery"


@pytest.fixture
def okta(make_scim):
    scim = make_scim("scim")
    scim.client.raise_request_exception = False  # a 500 is an answer to look at, not an exception
    return scim


@pytest.fixture
def entra(make_scim):
    scim = make_scim("scim")
    scim.client.raise_request_exception = False
    return scim


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
    assert "another account's login" in error(
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


# Found by an attack on the first version (lifecycle bypasses, text PostgreSQL cannot hold, letters
# Python lowers differently, the runtime role)


def counts() -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM scim_users),"
            " (SELECT count(*) FROM tokens), (SELECT count(*) FROM audit_events)"
        )
        return cursor.fetchone()


# Lifecycle bypasses


def test_a_staff_suspension_is_not_lifted_by_deleting_the_user_and_creating_it_again(okta, ann):
    """Staff suspended the account (abuse, say): only staff lift that. The identity provider's
    DELETE and a POST of the same userName with active: true must not bring it back active."""
    account = Account.objects.get(pk=ann["id"])
    account_suspend(account=account, actor=get_user_model().objects.create_user("support1", is_staff=True))
    error(
        okta.send("PATCH", f"/Users/{ann['id']}", patch_body({"op": "replace", "path": "active", "value": True})),
        400,
        "mutability",
    )  # held: the direct way is refused

    assert okta.send("DELETE", f"/Users/{ann['id']}").status_code == 204
    again = okta.send("POST", "/Users", new_user())

    account.refresh_from_db()
    assert account.status != AccountStatus.ACTIVE, (again.status_code, again.content)


def test_a_user_its_identity_provider_deleted_is_not_restored_by_the_person(okta, ann, client):
    """The identity provider deleted Ann's User (she left): it restores the account by creating the
    userName again, staff may too. Ann herself must not, through a sign-up with her address and the
    restore link it mails."""
    assert okta.send("DELETE", f"/Users/{ann['id']}").status_code == 204
    client.post(reverse("sign-up"), {"email": "ann@example.com", "login": "ann-again"} | NEW_PASSWORD)
    run_queued_tasks()
    restore = live_token(account=int(ann["id"]), action=TokenAction.RESTORE)
    if restore is not None:
        client.post(landing_path(restore))
    account = Account.objects.get(pk=ann["id"])
    assert (restore, account.status) == (None, AccountStatus.DEPROVISIONED)


# Bad input: a SCIM error, never a 500


def scim_error(response) -> int:
    """The status of a SCIM error (the test fails on anything else, a 500 page included)."""
    assert response["Content-Type"] == "application/scim+json", (response.status_code, response.content[:120])
    assert 400 <= response.status_code < 500, response.content
    return response.status_code


@pytest.mark.parametrize(
    "fields",
    [
        {"userName": "ann\u0000@example.com"},
        {"externalId": "00u\u0000ann"},
        {"userName": "ann\ud800@example.com"},
        {"externalId": "\udfff"},
        {"password": "Zebra-Quartz-7741-sky\ud800"},
    ],
    ids=["nul-userName", "nul-externalId", "surrogate-userName", "surrogate-externalId", "surrogate-password"],
)
def test_a_nul_byte_or_lone_surrogate_in_a_new_user_is_a_scim_error(okta, fields):
    """PostgreSQL's text holds neither a NUL byte nor a lone surrogate (JSON allows both, as \\u0000 and
    \\ud800): the body is refused as invalidValue, and nothing is written."""
    before = counts()
    scim_error(okta.send("POST", "/Users", new_user(**fields)))
    assert counts() == before


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "replace", "path": "userName", "value": "ann\u0000"},
        {"op": "replace", "path": "externalId", "value": "a\u0000b"},
        {"op": "replace", "value": {"externalId": "\ud800"}},
        {"op": "replace", "path": "password", "value": "Zebra-Quartz-7741-sky\ud800"},
    ],
    ids=["nul-userName", "nul-externalId", "surrogate-externalId", "surrogate-password"],
)
def test_a_nul_byte_or_lone_surrogate_in_a_patch_is_a_scim_error(okta, ann, operation):
    scim_error(okta.send("PATCH", f"/Users/{ann['id']}", patch_body(operation)))
    assert ScimUser.objects.get(account=ann["id"]).external_id == "00u-ann"


def test_a_start_index_past_a_bigint_is_a_scim_error(okta, ann):
    """startIndex "past the end" gives an empty page; one past PostgreSQL's bigint is a 500."""
    response = okta.get("/Users", startIndex="9" * 25)
    assert response.status_code == 200 or scim_error(response)


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_a_user_id_of_other_unicode_digits_is_a_scim_404(okta, ann, method):
    """ "²".isdigit() is true and int("²") fails (a 500, once); "٣" is 3 to int() (User 3, once)."""
    body_sent = patch_body({"op": "replace", "path": "active", "value": False})
    for user_id in ("\u00b2", "\u0663"):  # a superscript two, an Arabic-Indic three
        path = f"/Users/{user_id}"
        response = okta.get(path) if method == "GET" else okta.send(method, path, body_sent)
        assert scim_error(response) == 404


# Unicode case: Python's lower() is not PostgreSQL's


def test_a_user_name_is_found_by_itself_whatever_its_letters(okta):
    """userName is unique ignoring case by PostgreSQL's lower(); the look-ups lower it with Python's,
    which turns "İ" into "i̇" (two characters) where PostgreSQL gives "i": the provider's look-up
    before a creation finds nothing, and its creation is then 409."""
    made = body(
        okta.send("POST", "/Users", new_user(userName="İnn@example.com", emails=[{"value": "inn@example.com"}]))
    )
    found = body(okta.get("/Users", filter='userName eq "İnn@example.com"'))
    assert [user["id"] for user in found["Resources"]] == [made["id"]]


def test_a_deleted_user_whose_name_lowers_differently_is_restored_not_409(okta):
    made = body(
        okta.send("POST", "/Users", new_user(userName="İnn@example.com", emails=[{"value": "inn@example.com"}]))
    )
    okta.send("DELETE", f"/Users/{made['id']}")
    again = okta.send("POST", "/Users", new_user(userName="İnn@example.com", emails=[{"value": "inn@example.com"}]))
    assert (again.status_code, body(again).get("id")) == (201, made["id"])


# The database, as the runtime role


def test_the_runtime_role_cannot_move_a_user_to_another_client(okta, entra, ann, refused):
    """A User stays its client's "for good" (docs/rules.md, "SCIM Users"): the UPDATE is refused, but a
    DELETE of the row and an INSERT naming the other client move it all the same, and the other client
    then reads, changes and deletes an account it never created."""
    move = (
        "DELETE FROM scim_users WHERE account = %(id)s;"
        " INSERT INTO scim_users (account, client, user_name) VALUES (%(id)s, %(client)s, 'ann@example.com')"
    )
    refused(move, {"id": ann["id"], "client": entra.api_client.pk}, match="accounts: ")

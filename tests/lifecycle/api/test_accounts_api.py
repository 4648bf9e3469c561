"""The client API's account operations, over Django's test client: what each answers and what the
database holds after it."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account, AccountPassword, AccountStatus
from lifecycle.api import views
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create
from platform_events.audit.models import ActorType, AuditEvent
from tests.lifecycle.api.conftest import new_key

pytestmark = pytest.mark.django_db


def problem_type(response) -> str:
    assert response["Content-Type"] == "application/problem+json", response.content
    return response.json()["type"].removeprefix("/api/v1/problems/")


@pytest.mark.parametrize(
    ("path", "body"),
    [("/accounts", {"email": "ada@example.com", "login": "ada"}), ("/accounts/{id}/suspend", {"reason": "fraud"})],
)
def test_every_row_a_change_writes_names_the_client_its_address_its_agent_and_the_request(api, path, body):
    account = AccountFactory(active=True)
    before = set(AuditEvent.objects.values_list("id", flat=True))

    response = api.client.post(
        f"/api/v1{path.format(id=account.pk)}",
        body,
        content_type="application/json",
        headers={**api.headers(new_key()), "User-Agent": "billing/1.0"},
    )

    assert response.status_code in (200, 201), response.content
    rows = AuditEvent.objects.exclude(id__in=before)
    assert rows and {
        (row.actor_id, row.actor_ip, row.actor_user_agent, row.request_id is not None) for row in rows
    } == {(f"api-client:{api.api_client.pk}", "127.0.0.1", "billing/1.0", True)}
    assert len({row.request_id for row in rows}) == 1


def test_provision_makes_a_provisioned_account_audited_as_the_client(api):
    response = api.post("/accounts", {"email": "ada@example.com", "login": "ada"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "provisioned" and body["login"] == "ada"
    assert api.get(f"/accounts/{body['id']}").json() == body  # one account, one way of writing it
    account = Account.objects.get(pk=body["id"])
    assert account.tokens.filter(action="activation").exists()
    created = AuditEvent.objects.get(action="account.created", resource_id=str(account.pk))
    assert created.actor_type == ActorType.SERVICE
    assert created.actor_id == f"api-client:{api.api_client.pk}"
    assert created.actor_display == "billing"


def test_a_clients_acts_name_the_person_who_made_it(client):
    """A key made by a staff member acts in their name too: the trail ties the suspension to them."""
    maker = get_user_model().objects.create_superuser("kim", password="x")
    made, key = api_client_create(name="crm", scopes=["accounts:write"], actor=maker)
    account = AccountFactory(status=AccountStatus.ACTIVE)
    response = client.post(
        f"/api/v1/accounts/{account.pk}/suspend",
        {"reason": "fraud"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "k" * 43},
    )
    assert response.status_code == 200, response.content
    suspended = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
    assert (suspended.actor_id, suspended.actor_display) == (f"api-client:{made.pk}", "crm, made by kim")


def test_provision_with_a_password_sets_it_and_never_echoes_it(api):
    response = api.post("/accounts", {"email": "bo@example.com", "login": "bo", "password": "a long Passphrase 7"})

    assert response.status_code == 201
    assert "Passphrase" not in response.content.decode()
    assert AccountPassword.objects.filter(account_id=response.json()["id"]).exists()


@pytest.mark.parametrize("password", [" " * 10, "\u200b" * 10, "\u3000" * 10])
def test_a_password_nobody_can_see_is_refused_and_nothing_is_made(api, password):
    response = api.post("/accounts", {"email": "dee@example.com", "login": "dee", "password": password})
    assert problem_type(response) == "password-rejected"
    assert "visible characters" in response.json()["detail"]
    assert not Account.objects.filter(login="dee").exists()


def test_a_weak_password_is_refused_and_nothing_is_made(api):
    response = api.post("/accounts", {"email": "cy@example.com", "login": "cy", "password": "123"})

    assert response.status_code == 422
    assert problem_type(response) == "password-rejected"
    assert not Account.objects.filter(login="cy").exists()


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"email": "not an address", "login": "dee"}, "invalid-email"),  # the database's rules, as the pages'
        ({"email": "dee@example.com", "login": "has@sign"}, "invalid-login"),
        ({"email": "dee@" + "x" * 64 + ".example.com", "login": "dee"}, "invalid-email"),  # the database's rule
        ({"email": "=?utf-8?q?a=0D=0Ab?=@example.com", "login": "dee"}, "invalid-email"),
        ({"email": "dee@example.com"}, "validation-failed"),
        ({"email": "dee@example.com", "login": "dee", "admin": True}, "validation-failed"),
        ({"email": "dee@example.com", "login": "d\ud800"}, "invalid-login"),
        ({"email": "dee@example.com", "login": "d\x00"}, "invalid-login"),
        ({"email": " dee@example.com", "login": "dee"}, "invalid-email"),
    ],
)
def test_bad_input_is_refused_with_its_own_type(api, body, kind):
    response = api.post("/accounts", body)

    assert response.status_code == 422, response.content
    assert problem_type(response) == kind
    assert not Account.objects.exists()


def test_a_taken_login_is_the_databases_refusal(api):
    AccountFactory(login="eve", email="eve@example.com")

    response = api.post("/accounts", {"email": "other@example.com", "login": "EVE"})

    assert response.status_code == 409
    assert problem_type(response) == "login-taken"


def test_a_body_that_is_not_json_is_a_bad_request(api):
    response = api.post("/accounts", raw=b"{not json")

    assert response.status_code == 400
    assert problem_type(response) == "malformed-request"


def test_read_and_look_up(api):
    account = AccountFactory(login="Fay", email="Fay@Example.com")

    assert api.get(f"/accounts/{account.pk}").json()["id"] == account.pk
    assert [a["id"] for a in api.get("/accounts", email="fay@example.com").json()["items"]] == [account.pk]
    assert [a["id"] for a in api.get("/accounts", login="FAY").json()["items"]] == [account.pk]
    assert api.get("/accounts", login="nobody").json() == {"items": []}
    missing = api.get("/accounts/999999999")
    assert missing.status_code == 404 and problem_type(missing) == "not-found"
    assert problem_type(api.get("/accounts")) == "validation-failed"
    assert api.get(f"/accounts/{2**63}").status_code == 422


def test_a_read_is_one_statement_with_the_key_and_rate_and_answers_as_the_orm_reads(api):
    """GET /accounts/{id} reads the account in the key-and-rate statement; the answer is the row as the
    ORM reads it, every field."""
    account = AccountFactory(suspended=True)
    api.get(f"/accounts/{account.pk}")  # the client's use noted: no UPDATE below

    with CaptureQueriesContext(connection) as queries:
        response = api.get(f"/accounts/{account.pk}")

    assert len(queries.captured_queries) == 1
    assert response.json() == views._account_out(Account.objects.get(pk=account.pk))


@pytest.mark.parametrize("given", ["00{id}", "{id}.0", "%20{id}", "0", "-1", str(2**63)])
def test_a_path_id_written_otherwise_is_read_as_ninja_reads_it(api, given):
    """An id written otherwise is the account ninja reads it as (read along, or after the key's statement
    when the two readings could differ), or refused as ninja refuses it."""
    account = AccountFactory()

    response = api.get(f"/accounts/{given.format(id=account.pk)}")

    if "{id}" in given:
        assert response.status_code == 200 and response.json()["id"] == account.pk
    else:
        assert response.status_code == 422 and problem_type(response) == "validation-failed"


def test_an_id_of_more_digits_than_python_converts_is_refused_as_ninja_refuses_it(api):
    """int() refuses more than 4,300 digits: the read along the key's statement leaves such an id to
    ninja, whose answer is a validation problem, not a server error."""
    response = api.get("/accounts/" + "9" * 4301)

    assert response.status_code == 422 and problem_type(response) == "validation-failed"


def test_a_key_without_the_scope_is_refused_alike_for_an_account_and_for_none(make_api):
    """A client without accounts:read gets the same answer for an account that exists and for one that
    does not (that its key's statement reads no row is platform_events/api/clients.py's test)."""
    account = AccountFactory()
    api = make_api("sessions")

    there, missing = api.get(f"/accounts/{account.pk}"), api.get("/accounts/999999999")

    assert there.status_code == missing.status_code == 403
    assert there.json()["type"] == missing.json()["type"] == "/api/v1/problems/insufficient-scope"


def test_suspend_and_unsuspend_with_a_reason(api):
    account = AccountFactory(active=True)

    suspended = api.post(f"/accounts/{account.pk}/suspend", {"reason": "chargeback"})
    again = api.post(f"/accounts/{account.pk}/suspend", {"reason": "chargeback"})
    lifted = api.post(f"/accounts/{account.pk}/unsuspend", {"reason": "paid"})

    assert suspended.status_code == 200 and suspended.json()["status"] == "suspended"
    assert again.status_code == 409 and problem_type(again) == "already-suspended"
    assert lifted.json()["status"] == "active"
    row = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
    assert (row.reason, row.actor_type) == ("chargeback", ActorType.SERVICE)


def test_a_reason_is_required(api):
    account = AccountFactory(active=True)

    for body in ({}, {"reason": ""}, {"reason": "   "}):
        response = api.post(f"/accounts/{account.pk}/suspend", body)
        assert response.status_code == 422, body
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE


def test_e_mails_are_queued_never_shown(api):
    provisioned, active = AccountFactory(), AccountFactory(active=True)

    activation = api.post(f"/accounts/{provisioned.pk}/activation-email")
    recovery = api.post(f"/accounts/{active.pk}/recovery-email")
    wrong = api.post(f"/accounts/{active.pk}/activation-email")

    assert activation.status_code == 202 and activation.json()["action"] == "activation"
    assert recovery.status_code == 202 and recovery.json()["action"] == "password_recovery"
    assert set(recovery.json()) == {"account_id", "action", "expires_at"}
    assert wrong.status_code == 409 and problem_type(wrong) == "wrong-account-state"


def test_every_scope_is_refused_without_it(make_api):
    account = AccountFactory(active=True)
    reader, writer, checker = make_api("accounts:read"), make_api("accounts:write"), make_api("sessions")

    calls = {
        "accounts:read": [lambda api: api.get(f"/accounts/{account.pk}"), lambda api: api.get("/accounts", login="x")],
        "accounts:write": [
            lambda api: api.post("/accounts", {"email": "g@example.com", "login": "g"}),
            lambda api: api.post(f"/accounts/{account.pk}/suspend", {"reason": "r"}),
            lambda api: api.post(f"/accounts/{account.pk}/unsuspend", {"reason": "r"}),
            lambda api: api.post(f"/accounts/{account.pk}/activation-email"),
            lambda api: api.post(f"/accounts/{account.pk}/recovery-email"),
        ],
        "sessions": [lambda api: api.post("/sessions", {"identifier": account.login, "password": "x"}, key=None)],
    }
    for scope, holder in [("accounts:read", reader), ("accounts:write", writer), ("sessions", checker)]:
        for other_scope, scope_calls in calls.items():
            for call in scope_calls:
                response = call(holder)
                if other_scope == scope:
                    assert response.status_code < 400 or problem_type(response) != "insufficient-scope", scope
                else:
                    assert response.status_code == 403, (scope, other_scope, response.content)
                    assert problem_type(response) == "insufficient-scope"
    # Only the writer's calls did anything: one suspension, one unsuspension, one account made.
    changes = AuditEvent.objects.filter(
        resource_id=str(account.pk), action__in=["account.suspended", "account.unsuspended"]
    )
    assert {row.actor_id for row in changes} == {f"api-client:{writer.api_client.pk}"} and changes.count() == 2
    assert Account.objects.filter(login="g").count() == 1


def test_no_key_a_wrong_key_or_a_revoked_key_is_unauthenticated(api, client):
    from platform_events.api.clients import api_client_revoke

    assert client.get("/api/v1/accounts/1").status_code == 401
    response = client.get("/api/v1/accounts/1", headers={"Authorization": "Bearer lc_wrong"})
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    api_client_revoke(client=api.api_client, reason="leaked", actor=None)
    assert api.get("/accounts/1").status_code == 401


def test_openapi_schema_and_docs_page(client):
    schema = client.get("/api/v1/openapi.json").json()

    assert schema["openapi"].startswith("3.1")
    assert "/api/v1/sessions" in schema["paths"]
    assert client.get("/api/v1/docs").status_code == 200
    problem = client.get("/api/v1/problems/login-taken").json()
    assert problem == {"type": "/api/v1/problems/login-taken", "status": 409, "title": "This login is already taken"}

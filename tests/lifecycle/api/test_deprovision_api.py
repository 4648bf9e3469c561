"""DELETE /api/v1/accounts/{id}: deprovisioning through the client API, its scope, its idempotency,
its reason in the trail; and how the other operations answer for a deprovisioned account."""

from typing import get_args

import pytest

from accounts.models import Account, AccountStatus
from lifecycle.api.schemas import Status
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import ActorType, AuditEvent
from platform_events.outbox.models import OutboxEvent
from platform_events.webhooks.endpoints import endpoint_create
from platform_events.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.lifecycle.api.conftest import ADA_PASSWORD, new_key
from tests.lifecycle.api.test_accounts_api import problem_type

pytestmark = pytest.mark.django_db


def test_delete_deprovisions_the_account_and_answers_it(api):
    account = AccountFactory(active=True)

    response = api.delete(f"/accounts/{account.pk}", reason="contract ended")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "deprovisioned" and body["deprovisioned_at"] is not None
    assert body["reprovisioned_at"] is None
    assert api.get(f"/accounts/{account.pk}").json() == body
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED
    row = AuditEvent.objects.get(action="account.deprovisioned", resource_id=str(account.pk))
    assert (row.reason, row.actor_type) == ("contract ended", ActorType.SERVICE)
    assert row.actor_id == f"api-client:{api.api_client.pk}"


def test_the_reason_may_be_left_out(api):
    account = AccountFactory()

    response = api.delete(f"/accounts/{account.pk}")

    assert response.status_code == 200 and response.json()["status"] == "deprovisioned"
    assert AuditEvent.objects.get(action="account.deprovisioned", resource_id=str(account.pk)).reason is None


def test_a_blank_or_overlong_reason_is_refused_and_changes_nothing(api):
    account = AccountFactory(active=True)

    for reason in ["", "   ", "x" * 1001, "a\x00b"]:
        response = api.delete(f"/accounts/{account.pk}", reason=reason)
        assert response.status_code == 422 and problem_type(response) == "validation-failed", reason
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE


@pytest.mark.parametrize("state", ["provisioned", "active", "suspended"])
def test_every_state_can_be_deprovisioned(api, state):
    account = AccountFactory(**({state: True} if state != "provisioned" else {}))

    response = api.delete(f"/accounts/{account.pk}")

    assert response.status_code == 200 and response.json()["status"] == "deprovisioned"


def test_a_repeated_delete_answers_as_the_first_and_changes_nothing(api):
    account = AccountFactory(active=True)

    first = api.delete(f"/accounts/{account.pk}", reason="first")
    again = api.delete(f"/accounts/{account.pk}", reason="second")

    assert again.status_code == first.status_code == 200
    assert again.json() == first.json()
    assert AuditEvent.objects.filter(action="account.deprovisioned", resource_id=str(account.pk)).count() == 1
    assert OutboxEvent.objects.filter(event_type="account.deprovisioned", aggregate_id=str(account.pk)).count() == 1


def test_a_retry_with_the_same_idempotency_key_is_replayed(api):
    account = AccountFactory(active=True)
    key = new_key()

    first = api.delete(f"/accounts/{account.pk}", key=key)
    replayed = api.delete(f"/accounts/{account.pk}", key=key)
    other_request = api.delete(f"/accounts/{account.pk}", key=key, reason="other")

    assert replayed.status_code == 200 and replayed.json() == first.json()
    assert replayed["Idempotent-Replayed"] == "true"
    assert other_request.status_code == 422 and problem_type(other_request) == "idempotency-key-reused"


def test_delete_needs_an_idempotency_key(api):
    account = AccountFactory(active=True)

    response = api.delete(f"/accounts/{account.pk}", key=None)

    assert response.status_code == 400 and problem_type(response) == "idempotency-key-missing"
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE


def test_an_unknown_account_is_not_found(api):
    for account_id in [999999999, 2**63 - 1]:
        response = api.delete(f"/accounts/{account_id}")
        assert response.status_code == 404 and problem_type(response) == "not-found"
    assert api.delete(f"/accounts/{2**63}").status_code == 422
    assert api.delete("/accounts/0").status_code == 422


@pytest.mark.parametrize(
    "call",
    [
        lambda api, pk: api.post(f"/accounts/{pk}/suspend", {"reason": "r"}),
        lambda api, pk: api.post(f"/accounts/{pk}/unsuspend", {"reason": "r"}),
        lambda api, pk: api.post(f"/accounts/{pk}/activation-email"),
        lambda api, pk: api.post(f"/accounts/{pk}/recovery-email"),
    ],
    ids=["suspend", "unsuspend", "activation-email", "recovery-email"],
)
def test_other_writes_on_a_deprovisioned_account_are_a_clear_conflict(api, call):
    account = AccountFactory(deprovisioned=True)

    response = call(api, account.pk)

    assert response.status_code == 409, response.content
    assert problem_type(response) == "account-deprovisioned"
    assert response.json()["account_id"] == account.pk and response.json()["state"] == "deprovisioned"
    assert "deprovisioned" in response.json()["detail"]
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED


def test_a_deprovisioned_account_fails_a_password_check_as_a_wrong_password(api, ada):
    wrong = api.post("/sessions", {"identifier": "ada", "password": "not the password"}, key=None)
    api.delete(f"/accounts/{ada.pk}")

    deprovisioned = api.post("/sessions", {"identifier": "ada", "password": ADA_PASSWORD}, key=None)

    assert deprovisioned.status_code == wrong.status_code == 403
    assert deprovisioned.json() == wrong.json()
    assert deprovisioned["Content-Type"] == wrong["Content-Type"]
    assert Account.objects.get(pk=ada.pk).status == AccountStatus.DEPROVISIONED


@pytest.mark.usefixtures("webhook_settings")
def test_a_deprovision_is_queued_for_the_endpoints_that_subscribe_to_it(api):
    account = AccountFactory(active=True)
    subscribed, _ = endpoint_create(
        url="https://hooks.example.com/a", events=["account.deprovisioned"], owner="crm", actor=None
    )
    other, _ = endpoint_create(url="https://hooks.example.com/b", events=["account.suspended"], owner="crm", actor=None)

    api.delete(f"/accounts/{account.pk}", reason="contract ended")

    delivery = WebhookDelivery.objects.select_related("event").get(event__aggregate_id=str(account.pk))
    assert (delivery.subscription_id, delivery.status) == (subscribed.pk, DeliveryStatus.PENDING)
    assert delivery.event.payload["type"] == "account.deprovisioned"
    assert delivery.event.payload["data"]["status"] == "deprovisioned"
    assert not WebhookDelivery.objects.filter(subscription=other).exists()


def test_the_status_the_api_answers_is_every_status_the_database_has():
    assert set(get_args(Status)) == set(AccountStatus.values)


def test_the_openapi_document_describes_the_delete_and_the_deprovisioned_account(client):
    schema = client.get("/api/v1/openapi.json").json()

    delete = schema["paths"]["/api/v1/accounts/{account_id}"]["delete"]
    assert {"200", "404", "409"} <= set(delete["responses"])
    assert [p["name"] for p in delete["parameters"] if p["in"] == "query"] == ["reason", "erase"]
    assert any(p["name"] == "Idempotency-Key" and p["required"] for p in delete["parameters"])
    account = schema["components"]["schemas"]["AccountOut"]["properties"]
    assert "deprovisioned" in account["status"]["enum"]
    assert {"deprovisioned_at", "reprovisioned_at"} <= set(account)
    assert client.get("/api/v1/problems/account-deprovisioned").json()["status"] == 409

"""DELETE /api/v1/accounts/{id}?erase=now: erasure through the client API, its scope (accounts:erase
besides accounts:delete), its idempotency; and how the other operations answer for an erased account."""

import pytest

from accounts.models import Account, AccountStatus
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create
from platform_events.api.models import ApiScope
from platform_events.audit.models import ActorType, AuditEvent
from platform_events.outbox.models import OutboxEvent
from tests.lifecycle.api.conftest import new_key
from tests.lifecycle.api.test_accounts_api import problem_type

pytestmark = pytest.mark.django_db


def test_erase_now_deprovisions_and_erases_at_once_and_answers_the_erased_account(api):
    account = AccountFactory(active=True, email="gone@example.com", login="gone")

    response = api.delete(f"/accounts/{account.pk}", erase="now", reason="the person asked")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["email"], body["login"]) == ("erased", None, None)
    assert body["deprovisioned_at"] is not None and body["activated_at"] is not None
    assert api.get(f"/accounts/{account.pk}").json() == body
    rows = AuditEvent.objects.filter(
        resource_id=str(account.pk), action__in=["account.deprovisioned", "account.erased"]
    )
    assert {(row.action, row.reason, row.actor_type) for row in rows} == {
        ("account.deprovisioned", "the person asked", ActorType.SERVICE),
        ("account.erased", "the person asked", ActorType.SERVICE),
    }
    last = OutboxEvent.objects.filter(aggregate_id=str(account.pk)).order_by("-seq").first()
    assert (last.event_type, last.payload["data"]) == ("account.erased", {"id": account.pk})


def test_a_deprovisioned_account_is_erased_and_a_repeat_or_a_plain_delete_answers_the_same(api):
    account = AccountFactory(deprovisioned=True)
    key = new_key()

    first = api.delete(f"/accounts/{account.pk}", key=key, erase="now")
    replayed = api.delete(f"/accounts/{account.pk}", key=key, erase="now")
    again = api.delete(f"/accounts/{account.pk}", erase="now")
    plain = api.delete(f"/accounts/{account.pk}")

    assert first.status_code == replayed.status_code == again.status_code == plain.status_code == 200
    assert first.json() == replayed.json() == again.json() == plain.json()
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    assert AuditEvent.objects.filter(action="account.erased", resource_id=str(account.pk)).count() == 1


def test_erase_now_needs_the_scope_accounts_erase_and_without_it_changes_nothing(make_api):
    account = AccountFactory(active=True)
    api = make_api(ApiScope.ACCOUNTS_DELETE)

    response = api.delete(f"/accounts/{account.pk}", erase="now")

    assert response.status_code == 403 and problem_type(response) == "insufficient-scope"
    assert "accounts:erase" in response.json()["detail"]
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE


def test_the_scope_alone_does_not_deprovision(make_api):
    account = AccountFactory(active=True)
    api = make_api(ApiScope.ACCOUNTS_ERASE)
    response = api.delete(f"/accounts/{account.pk}", erase="now")
    assert response.status_code == 403 and problem_type(response) == "insufficient-scope"


@pytest.mark.parametrize("value", ["", "later", "NOW", "1"])
def test_erase_takes_only_now(api, value):
    account = AccountFactory(active=True)
    response = api.delete(f"/accounts/{account.pk}", erase=value)
    assert response.status_code == 422 and problem_type(response) == "validation-failed"
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE


@pytest.mark.parametrize(
    "path,body",
    [
        ("/accounts/{id}/suspend", {"reason": "x"}),
        ("/accounts/{id}/unsuspend", {"reason": "x"}),
        ("/accounts/{id}/activation-email", None),
        ("/accounts/{id}/recovery-email", None),
    ],
)
def test_an_erased_account_takes_no_change_answered_as_gone(api, path, body):
    account = AccountFactory(erased=True)
    response = api.post(path.format(id=account.pk), body)
    assert response.status_code == 410 and problem_type(response) == "account-erased", response.content
    assert Account.objects.get(pk=account.pk).status == AccountStatus.ERASED


def test_only_staff_who_may_erase_can_give_a_client_the_scope(db):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from platform_events.api.clients import ApiClientError

    made = {}
    for role in ("Support", "Privacy"):
        user = get_user_model().objects.create_user(f"{role.lower()}-maker", password="x", is_staff=True)
        user.groups.set([Group.objects.get(name=role)])
        made[role] = user
    with pytest.raises(ApiClientError, match="accounts:erase"):
        api_client_create(name="support made", scopes=[ApiScope.ACCOUNTS_ERASE], actor=made["Support"])
    client, _ = api_client_create(name="privacy made", scopes=[ApiScope.ACCOUNTS_ERASE], actor=made["Privacy"])
    assert client.scopes == [ApiScope.ACCOUNTS_ERASE]


@pytest.mark.parametrize("had_a_node", [True, False])
def test_a_storage_sync_of_an_erased_account_is_answered_as_retired(api, had_a_node):
    from accounts.nodes import services

    services.service_add(service="sync-1.5", pattern="{node}/1.5/{uid}")
    services.node_add(service="sync-1.5", node="https://phx12", capacity=10, actor=None)
    account = AccountFactory(active=True)
    if had_a_node:
        assert api.put(f"/services/sync-1.5/accounts/{account.pk}/node", {"generation": 3}).status_code == 201
    assert api.delete(f"/accounts/{account.pk}", erase="now").json()["status"] == "erased"

    response = api.put(f"/services/sync-1.5/accounts/{account.pk}/node", {"generation": 4})

    assert response.status_code == 410 and problem_type(response) == "assignment-retired", response.content

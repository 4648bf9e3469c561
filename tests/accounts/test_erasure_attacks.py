"""Attacks on erasure (accounts/erasure.py, accounts/sql/0024_erasure.sql): copies of an erased person's
address or login that survive it, changes to the trail that erasure lets the runtime role make, and
data of a live person that erasing someone else removes."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse
from django_q.models import OrmQ

from accounts.erasure import account_erase
from accounts.models import AccountStatus
from accounts.services import account_deprovision, account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create, api_client_revoke
from platform_events.api.models import ApiScope
from platform_events.audit.context import audit_context
from platform_events.webhooks import dispatch
from platform_events.webhooks.endpoints import deliveries_redeliver
from platform_events.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.lifecycle.api.conftest import Api
from tests.platform_events.webhooks.test_dispatch import make_endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.attack]

ADDRESS = "Erin.Wholetrail@Example.org"
LOGIN = "erinwholetrail"


def holders(sql) -> dict[str, int]:
    """Each table the runtime role can read (partitions through their parent) with the count of its rows
    that hold the address or the login, in any case, as a pg_dump grep would find them."""
    tables = [
        name
        for (name,) in sql(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')"
            " AND NOT relispartition AND has_table_privilege(oid, 'SELECT') ORDER BY relname"
        )
    ]
    found = {}
    for table in tables:
        (count,) = sql(
            f"SELECT count(*) FROM {table} t WHERE strpos(lower(t::text), %s) > 0 OR strpos(lower(t::text), %s) > 0",
            [ADDRESS.lower(), LOGIN],
        )[0]
        if count:
            found[table] = count
    return found


def staff(username: str = "support1"):
    return get_user_model().objects.create_user(username, password="x", is_staff=True)


def erase(account, actor=None, reason="the person asked"):
    account.refresh_from_db()
    if account.status != AccountStatus.DEPROVISIONED:
        account_deprovision(account=account, actor=actor)
    return account_erase(account=account, actor=actor, reason=reason)


# 1. Copies that survive


def test_a_staff_reason_on_another_account_that_names_the_login_does_not_survive_erasure(sql):
    """Staff suspend a second account of the same person, naming the erased one's login in the reason
    ("sock puppet of <login>"): after the erasure, no row in the database names that login."""
    person = AccountFactory(active=True, email=ADDRESS, login=LOGIN)
    puppet, support = AccountFactory(active=True), staff()
    with audit_context(reason=f"sock puppet of {LOGIN}, same person"):
        account_suspend(account=puppet, actor=support)

    erase(person)

    assert holders(sql) == {}


def test_an_idempotency_key_that_names_the_login_does_not_survive_erasure(sql):
    """An integrator whose Idempotency-Keys are natural keys (suspend-<login>-<date>): the stored key
    names the login; after the erasure, no row names it."""
    person = AccountFactory(active=True, email=ADDRESS, login=LOGIN)
    _, key = api_client_create(name="crm", scopes=list(ApiScope.values), actor=None)
    api = Api(Client(), key)
    answer = api.post(
        f"/accounts/{person.pk}/suspend", {"reason": "chargeback"}, key=f"suspend-{LOGIN}-2026-11-27-0001"
    )
    assert answer.status_code == 200

    erase(person)

    assert holders(sql) == {}


def test_an_api_client_revoked_with_a_reason_that_quotes_the_address_keeps_no_copy_after_erasure(sql):
    """Staff revoke a client's key saying whose complaint led to it (its reason quotes the address):
    the reason is kept in api_clients.revoked_reason and in the api_client.revoked row's diff, which
    the erasure's sweep of other rows (reason and path only) does not reach."""
    person = AccountFactory(active=True, email=ADDRESS, login=LOGIN)
    client, _ = api_client_create(name="crm", scopes=[ApiScope.ACCOUNTS_READ], actor=None)
    api_client_revoke(client=client, reason=f"it e-mailed {ADDRESS} without consent", actor=staff("integrator1"))

    erase(person)

    assert holders(sql) == {}


# 2. What erasure cancelled comes back


def test_a_delivery_cancelled_by_erasure_cannot_be_sent_again(webhook_settings):
    """The deliveries erasure cancelled (events that carried the address) are final: "send again"
    would deliver the erased account's account.created and account.deprovisioned after its
    account.erased, and a consumer that deleted the person on account.erased makes them again."""
    make_endpoint("http://127.0.0.1:9/hook", events=["account.created", "account.deprovisioned", "account.erased"])
    person = AccountFactory(active=True, email=ADDRESS, login=LOGIN)

    erase(person)

    cancelled = WebhookDelivery.objects.filter(status=DeliveryStatus.CANCELLED)
    assert cancelled.count() >= 2
    assert deliveries_redeliver(cancelled, actor=staff("integrator1")) == 0


# 3. The runtime role rewrites the trail through erasure


def test_the_runtime_role_cannot_blank_a_live_accounts_address_out_of_the_trail_by_erasing_a_decoy(sql):
    """An address of a live account quoted in a staff reason is evidence in the trail. The runtime role
    inserts a never-activated decoy with that address (an unactivated account claims nothing),
    deprovisions and erases it: every audit row's reason that quoted the address now says [erased],
    though its account was never erased, and the decoy's own rows that would show which address it
    carried are scrubbed too."""
    live, support = AccountFactory(active=True, email="bob.live@example.com", login="boblive"), staff()
    with audit_context(reason="fraud ring: bob.live@example.com reported by the bank"):
        account_suspend(account=live, actor=support)

    (decoy,) = sql("INSERT INTO accounts (email, login) VALUES ('bob.live@example.com', 'decoy1') RETURNING id")[0]
    sql("UPDATE accounts SET status = 'deprovisioned' WHERE id = %s", [decoy])
    sql("SELECT account_erase(%s)", [decoy])

    (reason,) = sql(
        "SELECT reason FROM audit_events WHERE action = 'account.suspended' AND resource_id = %s", [str(live.pk)]
    )[0]
    assert reason == "fraud ring: bob.live@example.com reported by the bank"


# 4. Erasing one account removes a live person's data


def test_erasing_a_stale_sign_up_keeps_the_queued_recovery_of_the_live_account_that_now_holds_its_address(sql):
    """A sign-up never activated (the link was lost) holds an address it never claimed; the person signs
    up again and activates a second account with it. Support deprovisions the stale one; its erasure
    takes the address as its own identifier and deletes what names it: the live account's queued
    password-recovery request is dropped (no e-mail ever comes) and its staff reasons lose the address."""
    stale = AccountFactory(email=ADDRESS, login="erin_first_try")
    live = AccountFactory(active=True, email=ADDRESS.lower(), login=LOGIN)
    account_deprovision(account=stale, actor=staff())
    Client(REMOTE_ADDR="198.51.100.7").post(reverse("recover"), {"identifier": ADDRESS})
    assert OrmQ.objects.count() == 1

    erase(stale)

    assert OrmQ.objects.count() == 1, "the live account's recovery request was deleted by another account's erasure"
    live.refresh_from_db()
    assert live.email == ADDRESS.lower() and live.status == AccountStatus.ACTIVE


# 5. Erasure racing a webhook dispatch


@pytest.mark.django_db(transaction=True)
def test_an_erasure_during_a_delivery_in_flight_does_not_let_account_erased_overtake_it(receiver, webhook_settings):
    """A dispatcher is sending the account's account.created (the address in it) when the erasure runs:
    the erasure marks that delivery CANCELLED though the receiver has it, and a second dispatcher then
    sends account.erased while the first is still in flight. A receiver that handles events in parallel
    deletes the person, then stores account.created: the address stays on its side. The account's
    deliveries go one at a time; the erasure must not break that."""
    make_endpoint(receiver.url, events=["account.created", "account.erased"])
    person = AccountFactory(active=True, email=ADDRESS, login=LOGIN)
    account_deprovision(account=person, actor=None)
    overtaken = []

    def while_the_first_is_in_flight(number):
        if number != 1:
            return
        try:
            erase(person)
            dispatch.deliver()
            overtaken.extend(json.loads(r.body)["type"] for r in receiver.received[1:])
        finally:
            connection.close()

    receiver.on_request = while_the_first_is_in_flight
    dispatch.deliver()

    assert json.loads(receiver.received[0].body)["type"] == "account.created"
    assert overtaken == [], "account.erased was delivered while account.created was still in flight"
    first = WebhookDelivery.objects.get(event__event_type="account.created")
    assert first.status != DeliveryStatus.CANCELLED, "answered 200 by the receiver, recorded as never sent"

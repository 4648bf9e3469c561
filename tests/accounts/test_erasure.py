"""Erasure as the product runs it (accounts/erasure.py): the database's account_erase() and the pass over
Django's own tables, in one transaction; the cleanup's rule; and the whole promise, tried on an account
taken through everything the product does and then grepped for in a pg_dump of the database."""

import os
import re
import subprocess
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client
from django.urls import reverse
from django_q.brokers import get_broker
from django_q.models import OrmQ, Task
from django_q.monitor import save_task

from accounts.erasure import account_erase, accounts_erase_due
from accounts.errors import NotDeprovisioned
from accounts.models import Account, AccountStatus, ScimUser
from accounts.nodes import services as nodes
from accounts.services import account_deprovision
from lifecycle.demo.factories import AccountFactory
from lifecycle.ops.embedded_db import _embedded_postgres
from platform_events.api.clients import api_client_create
from platform_events.api.models import ApiClient, ApiScope
from platform_events.audit.models import AuditEvent
from platform_events.kafka import relay
from platform_events.outbox.models import EventType
from platform_events.webhooks import dispatch
from platform_events.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.lifecycle.api.conftest import Api
from tests.platform_events.webhooks.test_dispatch import make_endpoint
from tests.support import NEW_PASSWORD, admin_action, fail_logins, run_queued_tasks, staff_client
from tokens.mailroom.drain import drain
from tokens.models import Token

ADDRESS = "Erin.Wholetrail@Example.org"
LOGIN = "erinwholetrail"
# The userNames and externalIds an identity provider gave the account.
SCIM_NAMES = ["Erin.W@Corp.Example", "erin.wholetrail@corp.example", "ext-erin-77", "ext-erin-78"]


def dump_of_the_database() -> str:
    """pg_dump of the whole test database as its owner (the embedded server's own pg_dump, whatever
    the server: a newer client reads older servers)."""
    owner = connections["owner"].get_connection_params()
    binary = _embedded_postgres()._commands.POSTGRES_BIN_PATH / "pg_dump"
    done = subprocess.run(
        [
            str(binary),
            "--no-password",
            "-h",
            owner["host"],
            "-p",
            str(owner.get("port") or 5432),
            "-U",
            owner["user"],
            owner["dbname"],
        ],
        env={**os.environ, "PGPASSWORD": owner.get("password") or ""},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def copies(dump: str) -> list[str]:
    """The lines of ``dump`` that hold the address, the login or a SCIM userName or externalId of the
    account, in any case."""
    needles = [ADDRESS.lower(), LOGIN, *(name.lower() for name in SCIM_NAMES)]
    return [line for line in dump.splitlines() if any(needle in line.lower() for needle in needles)]


def mail_link(smtp_server, pattern: str) -> str:
    """The path of the newest e-mail's link matching ``pattern`` (a page name: activate, recover, restore)."""
    body = smtp_server.messages[-1].get_body(("plain",)).get_content()
    return re.search(rf"https?://[^/\s]+(/{pattern}/[A-Za-z0-9_-]{{43}}/?)", body).group(1)


@pytest.mark.django_db(transaction=True)
def test_an_account_taken_through_everything_and_erased_leaves_no_copy_in_a_dump_and_its_trail_whole(
    smtp_server, receiver, webhook_settings, kafka_broker, settings
):
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    settings.KAFKA_TOPIC_PARTITIONS = 1
    settings.KAFKA_MESSAGE_TIMEOUT_SECONDS = 5
    relay.start_stream()
    make_endpoint(receiver.url, events=[t for t in EventType.values if t != "webhook.test"])
    receiver.body = f'{{"seen": "{ADDRESS.lower()}", "login": "{LOGIN}"}}'.encode()  # a receiver that echoes
    nodes.service_add(service="sync-1.5", pattern="{node}/1.5/{uid}")
    nodes.node_add(service="sync-1.5", node="https://phx12", capacity=10, actor=None)
    person = Client(REMOTE_ADDR="198.51.100.7", HTTP_USER_AGENT="Erin's browser")

    # Sign-up on the public page; its task queued, then run as the worker would.
    person.post(reverse("sign-up"), {"email": ADDRESS, "login": LOGIN} | NEW_PASSWORD)
    assert run_queued_tasks() == 1
    account = Account.objects.get(login=LOGIN)
    # The first e-mail is refused for now (the refusal quotes the address, as mail servers do); a new
    # one asked for on the page is sent, and activation is by its link.
    smtp_server.handler.refuse_messages_to[ADDRESS] = f"451 4.2.0 <{ADDRESS}>: mailbox busy, try later"
    drain()
    assert Token.objects.filter(account=account, mail_error__icontains=ADDRESS).exists()
    smtp_server.handler.refuse_messages_to.clear()
    person.post(reverse("resend"), {"identifier": ADDRESS})
    assert run_queued_tasks() == 1
    drain()
    person.post(mail_link(smtp_server, "activate"), NEW_PASSWORD)
    # Recovery: asked for on the page, mailed, used.
    person.post(reverse("recover"), {"identifier": ADDRESS})
    run_queued_tasks()
    drain()
    person.post(mail_link(smtp_server, "recover"), NEW_PASSWORD)
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE

    # Staff: a suspension whose reason quotes the address; a staff log-in typed with the address.
    support = staff_client("Support")
    admin_action(support, "suspend", [account], reason=f"abuse reported about {ADDRESS}")
    admin_action(support, "unsuspend", [account], reason=f"{LOGIN} cleared")
    fail_logins(Client(), ADDRESS, times=2)
    # The API: calls with idempotency keys, whose stored answers name it.
    api = Api(Client(), _api_key())
    api.get(f"/accounts/{account.pk}")
    assert api.post(f"/accounts/{account.pk}/suspend", {"reason": f"{ADDRESS} is abusive"}).status_code == 200
    assert api.post(f"/accounts/{account.pk}/unsuspend", {"reason": "ok"}).status_code == 200
    # An identity provider's User: its userName and externalId, changed through SCIM.
    ScimUser.objects.create(
        account=account,
        client=ApiClient.objects.get(name="billing"),
        user_name=SCIM_NAMES[0],
        external_id=SCIM_NAMES[2],
    )
    changed = Client().patch(
        f"/scim/v2/Users/{account.pk}",
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "value": {"userName": SCIM_NAMES[1], "externalId": SCIM_NAMES[3]}}],
        },
        content_type="application/scim+json",
        HTTP_AUTHORIZATION=f"Bearer {api.key}",
    )
    assert changed.status_code == 200, changed.content
    # A node assignment, through the API as a storage service asks for it.
    assert api.put(f"/services/sync-1.5/accounts/{account.pk}/node", {"generation": 3}).status_code in (200, 201)
    # A task that failed, kept by django-q2 with its arguments.
    save_task(
        {
            "id": uuid.uuid4().hex,
            "name": "failed-send",
            "func": "tokens.tasks.send_again",
            "hook": None,
            "args": (ADDRESS, "password_recovery", {}),
            "kwargs": {},
            "result": f"SMTP refused {ADDRESS}",
            "started": account.created_at,
            "stopped": account.created_at,
            "success": False,
            "group": None,
            "save": True,
            "cluster": "lifecycle",
            "attempt_count": 1,
        },
        get_broker(),
    )
    # Everything so far delivered to the webhook receiver and published to Kafka.
    dispatch.deliver()
    assert relay.publish().outage is None
    assert WebhookDelivery.objects.filter(http_response_body_excerpt__icontains=ADDRESS).exists()

    # Deprovisioned; meanwhile a delivery is due, and a recovery request waits in the queue.
    privacy = staff_client("Privacy")
    admin_action(privacy, "deprovision", [account], reason=f"asked by {ADDRESS} by e-mail")
    person.post(reverse("recover"), {"identifier": LOGIN})
    assert OrmQ.objects.count() == 1
    assert copies(dump_of_the_database())

    account.refresh_from_db()
    done = account_erase(
        account=account,
        actor=get_user_model().objects.get(username="privacy1"),
        reason=f"erasure asked for by {ADDRESS}",
    )

    dump = dump_of_the_database()
    assert copies(dump) == []
    assert done["deliveries_cancelled"] >= 1 and done["tasks_deleted"] == 2 and done["staff_log_ins_deleted"] >= 1
    assert done["idempotency_answers_blanked"] >= 2
    assert OrmQ.objects.count() == 0 and not Task.objects.filter(success=False).exists()
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.CANCELLED).exists()
    # The trail: every row still there, in order, readable, the last one the erasure's, by whom and why.
    trail = list(
        AuditEvent.objects.filter(resource_type="account", resource_id=str(account.pk)).order_by("occurred_at")
    )
    actions = [row.action for row in trail]
    for expected in (
        "account.created",
        "account.activated",
        "account.suspended",
        "account.unsuspended",
        "account.deprovisioned",
        "account.erased",
    ):
        assert expected in actions
    assert actions[-1] == "account.erased"
    assert trail[-1].actor_display == "privacy1" and trail[-1].reason == "erasure asked for by [erased]"
    suspended = next(row for row in trail if row.action == "account.suspended")
    assert suspended.reason == "abuse reported about [erased]" and suspended.actor_display == "support1"
    # The admin shows the account as erased, and its trail with it.
    page = privacy.get(reverse("admin:accounts_account_change", args=[account.pk])).content.decode()
    assert f"account #{account.pk} (erased)" in page and "account.erased" in page
    assert ADDRESS.lower() not in page.lower()


def _api_key() -> str:
    """A key of a client with every scope."""
    _, key = api_client_create(name="billing", scopes=list(ApiScope.values), actor=None)
    return key


@pytest.mark.django_db
def test_only_a_deprovisioned_account_is_erased_and_an_erased_one_again_is_nothing_to_do(privacy):
    account = AccountFactory(active=True, email=ADDRESS, login=LOGIN)
    with pytest.raises(NotDeprovisioned):
        account_erase(account=account, actor=None)
    account_deprovision(account=account, actor=None)
    assert account_erase(account=account, actor=None) is not None
    assert account.status == AccountStatus.ERASED and account.email is None and str(account).endswith("(erased)")
    assert account_erase(account=account, actor=None) is None


@pytest.mark.django_db
def test_the_cleanup_erases_those_deprovisioned_before_the_delay_and_keeps_the_others(sql):
    first, second, live = (AccountFactory(active=True) for _ in range(3))
    for account in (first, second):
        account_deprovision(account=account, actor=None)
    since = first.deprovisioned_at  # the transaction's clock: both at once

    assert accounts_erase_due(deprovisioned_before=since, batch_size=10) == 0
    after = since + timedelta(microseconds=1)
    assert accounts_erase_due(deprovisioned_before=after, batch_size=1) == 1
    assert accounts_erase_due(deprovisioned_before=after, batch_size=10) == 1
    assert accounts_erase_due(deprovisioned_before=after, batch_size=10) == 0
    statuses = dict(Account.objects.filter(pk__in=[first.pk, second.pk, live.pk]).values_list("pk", "status"))
    assert statuses == {first.pk: "erased", second.pk: "erased", live.pk: "active"}
    (reason,) = sql(
        "SELECT reason FROM audit_events WHERE action = 'account.erased' AND resource_id = %s", [str(first.pk)]
    )[0]
    assert reason.endswith("the erasure delay has passed")

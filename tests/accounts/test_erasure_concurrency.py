"""Erasure racing what else touches the account, each with its own connection (accounts/erasure.py,
accounts/sql/0024_erasure.sql): a restore link used at the same moment, a sign-up with the same
address, a mail run sending its e-mail, a webhook dispatch posting its event. No error leaks, and no
copy of the address or login comes back."""

import psycopg
import pytest
from django.contrib.auth.hashers import make_password
from django.db import connection

from accounts.erasure import account_erase
from accounts.errors import IllegalTransition
from accounts.models import Account, AccountStatus
from accounts.services import account_deprovision
from lifecycle.demo.factories import AccountFactory
from platform_events.webhooks import dispatch
from platform_events.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.platform_events.webhooks.test_dispatch import make_endpoint
from tests.support import connect, in_threads, wait_until_blocked
from tokens import tasks
from tokens.mailroom.drain import drain
from tokens.models import Token, TokenAction
from tokens.services import TOKEN_HOLDER, token_request_mail

pytestmark = pytest.mark.django_db(transaction=True)

ADDRESS = "Rae.Racing@Example.net"
LOGIN = "raeracing"


def copies() -> list[str]:
    """The tables (as text, row by row) that hold the address or the login, in any case."""
    found = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind = 'r' AND has_table_privilege(c.oid, 'SELECT')"
        )
        for (table,) in cursor.fetchall():
            cursor.execute(
                f"SELECT count(*) FROM {table} t WHERE strpos(lower(t::text), %s) > 0 OR strpos(lower(t::text), %s) > 0",
                [ADDRESS.lower(), LOGIN],
            )
            if cursor.fetchone()[0]:
                found.append(table)
    return found


def deprovisioned_with_a_restore_link() -> tuple[Account, Token]:
    account = AccountFactory(active=True, email=ADDRESS, login=LOGIN)
    account_deprovision(account=account, actor=None)
    token = token_request_mail(identifier=ADDRESS, action=TokenAction.RESTORE, actor=TOKEN_HOLDER)
    return account, token


def test_an_erasure_waits_for_a_restore_being_used_and_then_is_refused(smtp_server):
    account, token = deprovisioned_with_a_restore_link()
    with connect() as person:
        person.execute("UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [token.pk])
        threads, results = in_threads(lambda: account_erase(account=account, actor=None))
        wait_until_blocked(person, 1)
        person.commit()
        threads[0].join(timeout=30)
    ok, outcome = results[0]
    assert not ok and isinstance(outcome, IllegalTransition), outcome
    account.refresh_from_db()
    assert (account.status, account.email) == (AccountStatus.PROVISIONED, ADDRESS)


def test_a_restore_link_used_during_an_erasure_finds_nothing_once_it_is_done(smtp_server):
    account, token = deprovisioned_with_a_restore_link()
    with connect() as eraser:
        eraser.execute("SELECT account_erase(%s)", [account.pk])
        with connect() as person:
            threads, results = in_threads(
                lambda: (
                    person.execute(
                        "UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [token.pk]
                    ).rowcount
                )
            )
            wait_until_blocked(eraser, 1)
            eraser.commit()
            threads[0].join(timeout=30)
            person.commit()
    assert results[0] == (True, 0)  # the token was gone when the consumption got its row
    assert Account.objects.get(pk=account.pk).status == AccountStatus.ERASED
    assert copies() == []


def test_a_sign_up_with_the_address_during_an_erasure_is_made_once_the_address_is_free(smtp_server):
    account, _ = deprovisioned_with_a_restore_link()
    with connect() as eraser:
        eraser.execute("SELECT account_erase(%s)", [account.pk])
        threads, results = in_threads(
            lambda: tasks.sign_up(ADDRESS.lower(), "raenew", make_password("x"), {"request_id": "a" * 32})
        )
        wait_until_blocked(eraser, 1)  # the restore e-mail's issue waits for the account's row
        eraser.commit()
        threads[0].join(timeout=30)
    assert results[0][0], results[0]
    made = Account.objects.get(login="raenew")
    assert (made.email, made.status) == (ADDRESS.lower(), AccountStatus.PROVISIONED)
    assert Account.objects.get(pk=account.pk).status == AccountStatus.ERASED


def test_a_mail_run_sending_the_restore_e_mail_while_it_is_erased_records_nothing_of_it(smtp_server):
    account, token = deprovisioned_with_a_restore_link()
    erased = []

    def erase_while_the_message_is_in(number):
        erased.append(in_threads(lambda: account_erase(account=Account.objects.get(pk=account.pk), actor=None)))
        threads, _ = erased[-1]
        threads[0].join(timeout=30)

    smtp_server.handler.before_answer = erase_while_the_message_is_in
    result = drain()
    assert result.error is None
    ((_, results),) = erased
    assert results[0][0], results[0]
    assert not Token.objects.filter(pk=token.pk).exists()
    assert Account.objects.get(pk=account.pk).status == AccountStatus.ERASED
    assert copies() == []


def test_a_webhook_dispatch_posting_its_event_while_it_is_erased_keeps_the_order_and_no_echo(
    receiver, webhook_settings
):
    make_endpoint(receiver.url, events=["account.deprovisioned", "account.erased"])
    account = AccountFactory(active=True, email=ADDRESS, login=LOGIN)
    account_deprovision(account=account, actor=None)
    receiver.body = f'{{"echo": "{ADDRESS}"}}'.encode()
    erased = []

    def erase_while_posting(number):
        if number == 1:
            erased.append(in_threads(lambda: account_erase(account=Account.objects.get(pk=account.pk), actor=None)))
            erased[-1][0][0].join(timeout=30)
            # What comes next (account.erased) carries the id only: nothing for a receiver to echo.
            receiver.body = b'{"ok": true}'

    receiver.on_request = erase_while_posting
    dispatch.deliver()
    ((_, results),) = erased
    assert results[0][0], results[0]
    # Being sent when the erasure ran, it was left to finish (so account.erased could not overtake it),
    # and its answer's echo was not kept; account.erased followed it.
    deprovisioned = WebhookDelivery.objects.get(event__event_type="account.deprovisioned")
    assert (deprovisioned.status, deprovisioned.http_response_body_excerpt) == (DeliveryStatus.DELIVERED, None)
    erased = WebhookDelivery.objects.get(event__event_type="account.erased")
    assert erased.status == DeliveryStatus.DELIVERED and erased.last_attempt_at >= deprovisioned.last_attempt_at
    assert copies() == []


def test_a_deadlock_with_another_session_is_broken_and_the_erasure_tried_again(webhook_settings, caplog):
    """A session that holds the account's due delivery and then asks for the account's row, while the
    erasure holds the row and waits for the delivery: PostgreSQL rolls back the session that looks
    for the cycle first, and when that is the erasure, the service tries it again once the session
    is done. The erasure looks first when the session asks within a second (deadlock_timeout) of the
    erasure starting to wait; on a loaded machine it may not, and the scenario is played again."""
    make_endpoint("https://hooks.example.com/x", events=["account.deprovisioned"])
    for _ in range(5):
        account = AccountFactory(active=True)
        account_deprovision(account=account, actor=None)
        with connect() as other:
            other.execute(
                "SELECT 1 FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                " WHERE d.status = 'PENDING' AND e.aggregate_type = 'account' AND e.aggregate_id = %s"
                " FOR UPDATE OF d",
                [str(account.pk)],
            )
            threads, results = in_threads(
                lambda pk=account.pk: account_erase(account=Account.objects.get(pk=pk), actor=None)
            )
            wait_until_blocked(other, 1)
            try:
                other.execute("SELECT 1 FROM accounts WHERE id = %s FOR UPDATE", [account.pk])
            except psycopg.errors.DeadlockDetected:
                other.rollback()  # this session was the one rolled back: the erasure goes on
                erasure_gave_way = False
            else:
                other.commit()  # granted once the erasure gave way
                erasure_gave_way = True
            threads[0].join(timeout=30)
        assert results[0][0], results[0]
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ERASED
        if erasure_gave_way:
            break
    else:
        pytest.fail("the other session was rolled back each time; the erasure never was")
    assert "deadlock broken, trying again" in caplog.text

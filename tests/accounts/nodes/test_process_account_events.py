"""tokenserver's tools/tokenserver/test_process_account_events.py over our outbox: the node-assignments
consumer (accounts/nodes/consumer.py) retires a deleted account's assignments and raises the
generation on a password change, once per event. The events here are the database's own, written by
the account triggers in the transaction of the change, so the account is deleted or its password
changed for real (as psql would), not described by a message."""

from datetime import datetime

import pytest
from django.contrib.auth.hashers import make_password
from django.db import connection

from accounts.models import Account
from accounts.nodes.consumer import ASSIGNMENTS, generation_for, process_account_events
from accounts.nodes.selectors import assignment_records
from accounts.nodes.services import MAX_GENERATION
from accounts.services import account_set_password
from platform_events.outbox.consumers import consume
from tests.accounts.nodes.conftest import SERVICE
from tests.support import connect_as_owner

pytestmark = pytest.mark.django_db


def delete_account(account_id):
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM accounts WHERE id = %s", [account_id])


def change_password(account_id):
    """Set the account's password as a person does; returns the change's time (the event carries it)."""
    account_set_password(account=Account.objects.get(pk=account_id), password_hash=make_password("x" * 12), actor=None)
    with connection.cursor() as cursor:
        cursor.execute("SELECT changed_at FROM account_passwords WHERE account = %s", [account_id])
        return cursor.fetchone()[0]


def records(account_id):
    return assignment_records(service=SERVICE, account_id=account_id)


def test_delete_user(nodes, account):
    """A deleted account's assignments stay until the consumer retires them: then every row is replaced,
    the live one with the tombstone generation; a second pass changes nothing."""
    a = account()
    user = nodes.assignment_allocate(service=SERVICE, account_id=a)
    nodes.assignment_update(user, client_state="abcdef")
    assert [r.replaced_at is not None for r in records(a)] == [True, False]
    delete_account(a)
    assert records(a)[-1].replaced_at is None  # deleting the account neither waits for nor removes them
    result = consume(ASSIGNMENTS)
    assert result.handled == 1
    rows = records(a)
    assert len(rows) == 2 and all(r.replaced_at is not None for r in rows)
    assert rows[-1].generation == MAX_GENERATION
    assert consume(ASSIGNMENTS).handled == 0
    assert nodes.assignment_current(service=SERVICE, account_id=a).retired


def test_delete_user_who_is_not_in_the_db(nodes, account):
    """Deleting an account that never had an assignment is processed (once) and makes none."""
    a = account()
    delete_account(a)
    assert consume(ASSIGNMENTS).handled == 1
    assert records(a) == []


def test_reset_user(nodes, account):
    """A password reset (a recovery sets the password as psql would: account_passwords) raises the
    generation to the change's time in milliseconds, less one."""
    a = account()
    nodes.assignment_allocate(service=SERVICE, account_id=a, generation=12)
    change_password(a)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE account_passwords SET password = %s WHERE account = %s", [make_password("y" * 12), a])
        cursor.execute("SELECT changed_at FROM account_passwords WHERE account = %s", [a])
        (changed_at,) = cursor.fetchone()
    consume(ASSIGNMENTS)
    assert nodes.assignment_current(service=SERVICE, account_id=a).generation == generation_for(changed_at)


def test_reset_user_who_is_not_in_the_db(nodes, account):
    """A reset of an account with no assignment gives it none."""
    a = account()
    change_password(a)
    assert consume(ASSIGNMENTS).handled == 1
    assert records(a) == []


def test_password_change(nodes, account):
    """A password change raises the generation to the change's time in milliseconds, less one, once."""
    a = account()
    nodes.assignment_allocate(service=SERVICE, account_id=a, generation=12)
    changed_at = change_password(a)
    assert consume(ASSIGNMENTS).handled == 1
    assert nodes.assignment_current(service=SERVICE, account_id=a).generation == generation_for(changed_at)
    assert consume(ASSIGNMENTS).handled == 0


def test_password_change_user_not_in_db(nodes, account):
    """A password change of an account with no assignment gives it none."""
    a = account()
    change_password(a)
    consume(ASSIGNMENTS)
    assert records(a) == []


@pytest.mark.django_db(transaction=True)  # the owner's event commits: emptied after, not left to later tests
def test_malformed_events(nodes, account, caplog):
    """tokenserver dropped junk from its queue; ours come from triggers, so a malformed one can only be
    written by the owner by hand. It fails, is logged and stays to be retried (never marked processed);
    other accounts' events go on."""
    broken, fine = account(), account()
    nodes.assignment_allocate(service=SERVICE, account_id=fine, generation=12)
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(
            "SELECT outbox_append_many('account', ARRAY[%s], 'account.password_changed',"
            " ARRAY[jsonb_build_object('id', %s::bigint)])",
            [str(broken), broken],
        )
    changed_at = change_password(fine)
    result = consume(ASSIGNMENTS)
    assert (result.handled, result.failed) == (1, 1)
    assert "consumer node-assignments failed" in caplog.text
    assert nodes.assignment_current(service=SERVICE, account_id=fine).generation == generation_for(changed_at)
    assert consume(ASSIGNMENTS).failed == 1  # still there, retried


def test_update_with_no_keys_changed_at(nodes, account):
    """Updates of an assignment without keys_changed_at work (tokenserver's SYNC-3633), and a reset then
    raises its generation."""
    a = account()
    user = nodes.assignment_allocate(service=SERVICE, account_id=a, generation=12, keys_changed_at=None)
    nodes.assignment_update(user, generation=13)
    nodes.assignment_update(user, generation=14, client_state="abcdef", keys_changed_at=13)
    changed_at = change_password(a)
    consume(ASSIGNMENTS)
    assert nodes.assignment_current(service=SERVICE, account_id=a).generation == generation_for(changed_at)


def test_update_with_no_keys_changed_at2(nodes, account):
    """A reset of an account whose current row was replaced gives it its fresh node first, then raises
    the new row's generation; the replaced row keeps the numbers its data was stored under."""
    a = account()
    first = nodes.assignment_allocate(service=SERVICE, account_id=a, generation=12, keys_changed_at=None)
    nodes.assignments_replace(service=SERVICE, account_id=a)
    changed_at = change_password(a)
    consume(ASSIGNMENTS)
    user = nodes.assignment_current(service=SERVICE, account_id=a)
    assert user.generation == generation_for(changed_at) and user.uid != first.uid
    assert next(r for r in records(a) if r.uid == first.uid).generation == 12


def test_the_schedule_and_the_command_run_the_same_pass(nodes, account):
    """The worker's task and manage.py process_account_events make one pass and say what it did."""
    a = account()
    nodes.assignment_allocate(service=SERVICE, account_id=a)
    delete_account(a)
    assert process_account_events().startswith("1 handled, 0 already processed")
    assert process_account_events().startswith("0 handled")


def test_generation_for_is_milliseconds_less_one():
    """A change at 2026-11-23 10:00:00.123 UTC sets generation 1795428000122."""
    assert generation_for(datetime.fromisoformat("2026-11-23T10:00:00.123+00:00")) == 1795428000122

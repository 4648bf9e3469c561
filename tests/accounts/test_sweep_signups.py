"""sweep_signups: seed 003's periodic cleanup of sign-ups that never activated."""

import io

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Account
from lifecycle.factories import AccountFactory
from platform_events.db.history import history_rewrite
from platform_events.db.locks import advisory_lock, lock_key
from tokens.models import Token
from tokens.services import token_resend_activation

pytestmark = pytest.mark.django_db


def age(account, days, sql):
    """Make a sign-up and its tokens ``days`` old (history the owner's key may rewrite)."""
    with history_rewrite():
        sql("UPDATE accounts SET created_at = now() - make_interval(days => %s) WHERE id = %s", [days, account.pk])
        sql("UPDATE tokens SET created_at = now() - make_interval(days => %s) WHERE account = %s", [days, account.pk])


def sweep(*args):
    out = io.StringIO()
    call_command("sweep_signups", *args, stdout=out)
    return out.getvalue()


def test_only_old_never_activated_sign_ups_and_their_tokens_are_deleted(sql):
    old = AccountFactory()
    young = AccountFactory()
    active = AccountFactory(active=True)
    suspended = AccountFactory(suspended=True, was_activated=False)
    for account in (old, active, suspended):
        age(account, 8, sql)
    age(young, 6, sql)
    output = sweep("--batch-size", "1")
    assert "Deleted 1 sign-up(s)" in output
    assert set(Account.objects.values_list("pk", flat=True)) == {young.pk, active.pk, suspended.pk}
    assert not Token.objects.filter(account_id=old.pk).exists()


def test_a_sign_up_that_asked_for_a_new_code_recently_is_kept(sql):
    account = AccountFactory()
    age(account, 30, sql)
    token_resend_activation(account=account, actor=None)
    assert "Deleted 0 sign-up(s)" in sweep()
    assert Account.objects.filter(pk=account.pk).exists()


def test_dry_run_counts_and_deletes_nothing(sql):
    for account in AccountFactory.create_batch(3):
        age(account, 8, sql)
    assert "Would delete 3 sign-up(s)" in sweep("--dry-run")
    assert Account.objects.count() == 3


def test_progress_is_reported_per_batch(sql):
    for account in AccountFactory.create_batch(3):
        age(account, 8, sql)
    output = sweep("--batch-size", "2")
    assert "2 deleted so far" in output and "3 deleted so far" in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than-days", "0"], "at least 1"),
        (["--older-than-days", "99999999"], "at most 36500"),  # issue 8, Low list: an OverflowError
        (["--batch-size", "0"], "between 1 and 100000"),
        (["--batch-size", "99999999999999999999"], "between 1 and 100000"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        sweep(*args)


@pytest.mark.django_db(transaction=True)
def test_a_second_sweep_does_not_start_while_one_runs(psql):
    psql.execute("SELECT pg_advisory_lock(%s)", [lock_key("sweep_signups")])
    try:
        with pytest.raises(CommandError, match="Another sweep_signups is running"):
            sweep()
    finally:
        psql.execute("SELECT pg_advisory_unlock_all()")
    with advisory_lock("sweep_signups") as acquired:
        assert acquired

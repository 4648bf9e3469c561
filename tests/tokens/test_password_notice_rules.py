"""The password notice as the database keeps it (tokens/sql/0023_password_notice.sql): a changed
password of an active account issues it, whoever changed it; it is mailed once, by the mailroom, and
opens nothing. Tried in raw SQL as the runtime role, as psql would."""

import pytest
from django.core import mail

from accounts.services import account_password_hash
from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite
from tokens.errors import TokenIsANotice
from tokens.mailroom.drain import drain
from tokens.models import Token, TokenAction
from tokens.services import token_consume

pytestmark = pytest.mark.django_db

FIRST, SECOND = account_password_hash("first pass phrase 1"), account_password_hash("second pass phrase 2")


def with_password(sql, **traits) -> int:
    account = AccountFactory(**({"active": True} | traits))
    sql("INSERT INTO account_passwords (account, password) VALUES (%s, %s)", [account.pk, FIRST])
    return account.pk


def notices(sql, account_id) -> list[tuple]:
    return sql(
        "SELECT consumed_at IS NULL, superseded_at IS NULL, expires_at - created_at, mail_state::text FROM tokens"
        " WHERE account = %s AND action = 'password_changed' ORDER BY id",
        [account_id],
    )


def test_a_password_changed_in_psql_issues_one_notice_for_seven_days(sql):
    account_id = with_password(sql)
    assert notices(sql, account_id) == []  # the first password is no change
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [SECOND, account_id])
    ((live, current, lasts, state),) = notices(sql, account_id)
    assert live and current and lasts.days == 7 and state == "queued"


def test_the_same_password_again_is_no_change(sql):
    account_id = with_password(sql)
    sql("UPDATE account_passwords SET password = password WHERE account = %s", [account_id])
    assert notices(sql, account_id) == []


def test_a_second_change_replaces_a_notice_not_yet_mailed(sql):
    account_id = with_password(sql)
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [SECOND, account_id])
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [FIRST, account_id])
    assert [row[3] for row in notices(sql, account_id)] == ["skipped", "queued"]


@pytest.mark.parametrize("status", ["suspended", "provisioned"])
def test_an_account_that_is_not_active_gets_no_notice(sql, status):
    account_id = with_password(sql, **({"suspended": True} if status == "suspended" else {"active": False}))
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [SECOND, account_id])
    assert notices(sql, account_id) == []


@pytest.mark.parametrize("status", ["suspended", "provisioned", "deprovisioned"])
def test_psql_cannot_issue_a_notice_for_an_account_that_is_not_active(refused, status):
    account = AccountFactory(**({status: True} if status != "provisioned" else {}))
    refused(
        "INSERT INTO tokens (account, action) VALUES (%s, 'password_changed')",
        [account.pk],
        match="is not active|is deprovisioned",
    )


def test_psql_cannot_consume_a_notice(sql, refused):
    account_id = with_password(sql)
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [SECOND, account_id])
    refused(
        "UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'password_changed'",
        [account_id],
        match="is a notice; it has nothing to use",
    )


def test_a_notices_secret_opens_no_page_and_consumes_nothing(sql):
    account_id = with_password(sql)
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [SECOND, account_id])
    notice = Token.objects.get(account_id=account_id, action=TokenAction.PASSWORD_CHANGED)
    with pytest.raises(TokenIsANotice):
        token_consume(secret=bytes(notice.secret), actor=None)
    for action in (TokenAction.ACTIVATION, TokenAction.PASSWORD_RECOVERY, TokenAction.RESTORE, TokenAction.DELETION):
        with pytest.raises(Exception, match="not valid"):
            token_consume(secret=bytes(notice.secret), action=action, actor=None)


def test_the_mailroom_mails_it_once_to_the_address_without_a_link(sql, settings):
    account_id = with_password(sql, email="Notice.Me@example.com", login="noticeme")
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [SECOND, account_id])
    drain()
    drain()
    (message,) = mail.outbox
    assert message.to == ["Notice.Me@example.com"] and message.subject == "Your password was changed"
    assert f"{settings.PUBLIC_BASE_URL}/recover/" in message.body and "/recover/" in message.alternatives[0][0]
    assert "/activate/" not in message.body and "noticeme" in message.body
    assert notices(sql, account_id)[0][3] == "sent"


def test_a_password_removed_and_set_again_is_a_change_and_sends_the_notice(sql):
    account_id = with_password(sql)
    with history_rewrite():  # activated in an earlier transaction, as a person's account is
        sql("UPDATE accounts SET activated_at = now() - interval '1 day' WHERE id = %s", [account_id])
    sql("DELETE FROM account_passwords WHERE account = %s", [account_id])
    sql("INSERT INTO account_passwords (account, password) VALUES (%s, %s)", [account_id, SECOND])
    assert [row[3] for row in notices(sql, account_id)] == ["queued"]

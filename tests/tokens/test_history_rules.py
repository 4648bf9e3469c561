"""A token's identity cannot be rewritten, it is issued unused, and what may still change by hand is
audited (tokens/sql/0008_history_rules.sql), tried in raw SQL as the runtime role, as psql would."""

import json

import pytest
from django.db import transaction
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite
from tests.support import max_code_attempts, wrong_code
from tokens.mailroom.drain import drain
from tokens.models import MailState, Token
from tokens.selectors import live_token
from tokens.services import token_resend_activation

pytestmark = pytest.mark.django_db

IDENTITY = ["account", "action", "secret", "code", "created_at", "expires_at", "failed_attempts", "superseded_at"]


@pytest.fixture
def token(sql):
    account_id = sql("INSERT INTO accounts (email, login) VALUES ('user@example.com', 'user1') RETURNING id")[0][0]
    return live_token(account=account_id)


@pytest.fixture
def other_account_id(sql):
    return sql("INSERT INTO accounts (email, login) VALUES ('other@example.com', 'other1') RETURNING id")[0][0]


def identity(sql, token_id):
    (values,) = sql(f"SELECT {', '.join(IDENTITY)} FROM tokens WHERE id = %s", [token_id])
    return dict(zip(IDENTITY, values, strict=True))


def trail(sql, token_id):
    return [
        action
        for (action,) in sql(
            "SELECT action FROM audit_events WHERE resource_type = 'token' AND resource_id = %s ORDER BY occurred_at",
            [str(token_id)],
        )
    ]


@pytest.mark.parametrize(
    "assignment",
    [
        "expires_at = now() + interval '1 year'",
        "account = %(other)s",
        "code = '12345'",
        "secret = sha256('chosen by the attacker')",
        "action = 'password_recovery'",
        "created_at = now() - interval '1 day'",
        # The trail's rows would name another token.
        "id = -id",
    ],
)
def test_a_tokens_identity_cannot_change(sql, refused, token, other_account_id, assignment):
    """Each is refused in psql, nothing changed: accepted, it would leave no audit row."""
    before, audited = identity(sql, token.pk), trail(sql, token.pk)
    refused(
        f"UPDATE tokens SET {assignment} WHERE id = %(token)s",
        {"other": other_account_id, "token": token.pk},
        match=rf"tokens: \w+ of token {token.pk} cannot be changed",
    )
    assert identity(sql, token.pk) == before
    assert trail(sql, token.pk) == audited


def test_the_wrong_code_count_only_grows(sql, refused, token):
    sql("UPDATE tokens SET failed_attempts = failed_attempts + 2 WHERE id = %s", [token.pk])
    refused("UPDATE tokens SET failed_attempts = 0 WHERE id = %s", [token.pk], match="failed_attempts of token")
    assert identity(sql, token.pk)["failed_attempts"] == 2


def test_a_replaced_token_stays_replaced(sql, refused, token):
    token_resend_activation(account=token.account, actor=None)
    refused("UPDATE tokens SET superseded_at = NULL WHERE id = %s", [token.pk], match="superseded_at of token")


@pytest.mark.parametrize(
    "columns, values",
    [
        ("consumed_at", "now()"),
        ("superseded_at", "now()"),
        ("failed_attempts", "3"),
        ("mail_state", "'sent'"),
        ("mailed_at", "now()"),
    ],
)
def test_a_token_is_issued_unused(sql, refused, token, columns, values):
    """A token inserted already consumed, replaced, with wrong codes or mailed is refused: an activation
    token inserted consumed would never activate its account."""
    count = sql("SELECT count(*) FROM tokens")
    refused(
        f"INSERT INTO tokens (account, action, {columns}) VALUES (%s, 'activation', {values})",
        [token.account_id],
        match="tokens: a token is issued unused",
    )
    assert sql("SELECT count(*) FROM tokens") == count


def test_each_wrong_code_is_audited_and_the_last_one_burns(sql, token):
    for _ in range(max_code_attempts()):
        sql("UPDATE tokens SET failed_attempts = failed_attempts + 1 WHERE id = %s", [token.pk])
    assert trail(sql, token.pk) == ["token.issued"] + ["token.code_rejected"] * (max_code_attempts() - 1) + [
        "token.burnt"
    ]


def test_a_token_replaced_by_a_newer_one_or_by_hand_is_audited(sql, token):
    newer = token_resend_activation(account=token.account, actor=None)
    assert trail(sql, token.pk) == ["token.issued", "token.superseded"]
    sql("UPDATE tokens SET superseded_at = now() WHERE id = %s", [newer.pk])
    assert trail(sql, newer.pk) == ["token.issued", "token.superseded"]


def test_an_insert_that_never_happens_cannot_replace_the_live_token_unaudited(sql, token):
    """The supersede runs before the insert, so a conflicting insert that does nothing would still
    replace the live token: the trail says so."""
    sql(
        "INSERT INTO tokens (id, account, action) VALUES (%s, %s, 'activation') ON CONFLICT DO NOTHING",
        [token.pk, token.account_id],
    )
    assert trail(sql, token.pk) == ["token.issued", "token.superseded"]


def test_a_mail_state_changed_by_hand_is_audited(sql, token):
    """Marking an e-mail sent that never went out is a change a person can make; the trail shows it."""
    sql("UPDATE tokens SET mail_state = 'sent' WHERE id = %s", [token.pk])
    ((before, after),) = sql(
        "SELECT diff_before, diff_after FROM audit_events WHERE action = 'token.mail_changed' AND resource_id = %s",
        [str(token.pk)],
    )
    assert json.loads(before)["mail_state"] == "queued" and json.loads(after)["mail_state"] == "sent"


def test_the_mailroom_s_own_claims_and_marks_are_not_audited(sql, smtp_server):
    """The hot path stays free of audit rows: one per e-mail would halve the drain's speed."""
    AccountFactory.create_batch(3)
    assert drain().sent == 3
    assert sql("SELECT count(*) FROM audit_events WHERE action = 'token.mail_changed'") == [(0,)]


def test_retry_now_in_the_admin_is_audited_with_the_staff_member(admin_client, admin_user, sql, token):
    Token.objects.filter(pk=token.pk).update(mail_state=MailState.DEAD)
    admin_client.post(
        reverse("admin:tokens_token_changelist"), {"action": "retry_mail_now", "_selected_action": [token.pk]}
    )
    rows = sql(
        "SELECT actor_type, actor_display, diff_after FROM audit_events WHERE action = 'token.mail_changed'"
        " AND resource_id = %s ORDER BY occurred_at",
        [str(token.pk)],
    )
    # The first row is the test's own UPDATE to dead (the database role); the second, the staff member's retry.
    assert [(actor, display) for actor, display, _ in rows] == [
        ("SYSTEM", "lifecycle_app"),
        ("USER", admin_user.username),
    ]
    assert json.loads(rows[1][2])["mail_state"] == "retrying"


def test_deleting_a_token_in_psql_is_audited(sql, token):
    """A DELETE typed in psql leaves its audit row."""
    sql("DELETE FROM tokens WHERE id = %s", [token.pk])
    assert trail(sql, token.pk) == ["token.issued", "token.deleted"]


def test_with_the_owners_key_a_token_may_be_aged_and_the_trail_hides_secret_and_code(sql, token):
    with transaction.atomic(), history_rewrite():
        sql("UPDATE tokens SET expires_at = created_at, code = %s WHERE id = %s", [wrong_code(token.code), token.pk])
    ((before, after),) = sql(
        "SELECT diff_before, diff_after FROM audit_events WHERE action = 'token.history_rewritten' AND resource_id = %s",
        [str(token.pk)],
    )
    before, after = json.loads(before), json.loads(after)
    assert sorted(after) == ["code", "expires_at"] and after["code"] == before["code"] == "(hidden)"
    assert token.code not in json.dumps([before, after])

"""Credentials at rest: once mailed, a token's row holds only digests of its link and code; the link
and the code of the e-mail still work, and every rule still holds for raw SQL as the runtime role."""

import base64
import re

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client
from django.urls import reverse

from accounts.models import Account, AccountStatus
from lifecycle.demo.factories import AccountFactory
from platform_events.key_rings import DERIVED_KEY_ID
from tests.support import NEW_PASSWORD, connect_as_owner, expire
from tokens.digests import code_digest, current_key_id, secret_digest
from tokens.errors import WrongCode
from tokens.links import secret_from_text
from tokens.mailroom.drain import drain
from tokens.models import MailState, Token
from tokens.selectors import live_token
from tokens.services import token_consume, token_consume_code, token_request_mail

pytestmark = pytest.mark.django_db

KEY_1 = b"1" * 32
KEY_2 = b"2" * 32


def mailed(account: Account) -> tuple[Token, str, str]:
    """Mail the account's live token; the token as it was (plain values in memory), and the link's
    secret and the code as the e-mail carries them."""
    token = live_token(account=account)
    before = len(mail.outbox)
    assert drain().sent == 1
    assert len(mail.outbox) == before + 1
    body = mail.outbox[-1].body
    secret = re.search(r"/(?:activate|recover)/([A-Za-z0-9_-]{43})", body).group(1)
    code = re.search(r"enter this code [^:]*: (\d{5})", body).group(1)
    return token, secret, code


def encodings(secret: bytes) -> list[str]:
    return [
        secret.hex(),
        secret.hex().upper(),
        base64.urlsafe_b64encode(secret).rstrip(b"=").decode(),
        base64.b64encode(secret).rstrip(b"=").decode(),
    ]


def field_equal_to(code: str, text: str) -> bool:
    """Whether ``code`` stands in ``text`` as a value of its own (not inside a longer number or a time)."""
    return re.search(rf"(?<![\d.:]){code}(?![\d])", text) is not None


class TestKeys:
    def test_the_code_digest_is_keyed_by_the_current_key_and_bound_to_the_token(self, settings):
        settings.TOKEN_DIGEST_KEYS = {"k1": KEY_1, "k2": KEY_2}
        assert current_key_id() == "k1"
        assert code_digest(7, "12345") == code_digest(7, "12345", key_id="k1")
        assert code_digest(7, "12345", key_id="k2") != code_digest(7, "12345", key_id="k1")
        assert code_digest(8, "12345") != code_digest(7, "12345")
        assert len(code_digest(7, "12345")) == 32

    def test_a_retired_key_checks_nothing(self, settings):
        settings.TOKEN_DIGEST_KEYS = {"k2": KEY_2}
        assert code_digest(7, "12345", key_id="k1") is None

    def test_unset_a_key_derived_from_secret_key_serves_development(self, settings):
        settings.TOKEN_DIGEST_KEYS = {}
        assert current_key_id() == DERIVED_KEY_ID
        assert code_digest(7, "12345") is not None

    def test_check_deploy_refuses_a_production_without_keys(self, settings):
        settings.TOKEN_DIGEST_KEYS = {}
        with pytest.raises(SystemCheckError, match="tokens.E001"):
            call_command("check", "--deploy", "--fail-level", "ERROR", tags=["security"])

    def test_check_deploy_is_quiet_about_keys_once_set(self, settings):
        from tokens.digests import check_digest_keys

        settings.TOKEN_DIGEST_KEYS = {"k1": KEY_1}
        assert check_digest_keys(None) == []


class TestMailedTokens:
    def test_the_row_keeps_digests_only_and_the_e_mail_still_works(self):
        account = AccountFactory()
        token, secret, code = mailed(account)
        assert (bytes(token.secret), token.code) == (secret_from_text(secret), code)
        token.refresh_from_db()
        assert (token.secret, token.code, token.mail_state) == (None, None, MailState.SENT)
        assert bytes(token.secret_digest) == secret_digest(secret_from_text(secret))
        assert bytes(token.code_digest) == code_digest(token.pk, code, key_id=token.code_digest_key)
        assert token_consume(secret=secret, actor=None).consumed_at is not None
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE

    def test_the_mailed_code_works_and_a_wrong_one_still_counts(self):
        account = AccountFactory(login="jane")
        token, _, code = mailed(account)
        wrong = f"{(int(code) + 1) % 100000:05d}"
        with pytest.raises(WrongCode):
            token_consume_code(identifier="jane", code=wrong, actor=None)
        assert Token.objects.get(pk=token.pk).failed_attempts == 1
        assert token_consume_code(identifier="jane", code=code, actor=None).consumed_at is not None

    def test_a_code_digested_under_a_key_since_rotated_out_still_works_while_its_key_is_listed(self, settings):
        settings.TOKEN_DIGEST_KEYS = {"k1": KEY_1}
        account = AccountFactory(login="jane")
        _, _, code = mailed(account)
        settings.TOKEN_DIGEST_KEYS = {"k2": KEY_2, "k1": KEY_1}
        assert token_consume_code(identifier="jane", code=code, actor=None).consumed_at is not None

    def test_asking_again_after_the_mail_gives_a_new_link_and_code(self):
        account = AccountFactory(login="jane")
        first, secret, _ = mailed(account)
        token_request_mail(identifier="jane", action=first.action, actor=None)
        second, new_secret, _ = mailed(account)
        assert second.pk != first.pk and new_secret != secret
        assert Token.objects.get(pk=first.pk).superseded_at is not None
        assert Client().post(reverse("activate-link", args=[secret]), NEW_PASSWORD).status_code == 410


class TestAsTheRuntimeRole:
    """Raw SQL on the app's own connection, the runtime role, as in psql."""

    def test_no_plain_value_of_a_mailed_token_can_be_read(self, sql):
        token, secret, code = mailed(AccountFactory())
        assert sql("SELECT secret, code FROM tokens WHERE id = %s", [token.pk]) == [(None, None)]
        (row,) = sql("SELECT t::text FROM tokens t WHERE id = %s", [token.pk])[0]
        assert not any(encoded in row for encoded in encodings(secret_from_text(secret)))
        assert not field_equal_to(code, row)

    @pytest.mark.parametrize(
        "assignment",
        [
            "code_digest = sha256('\\x00'::bytea)",
            "secret_digest = sha256('\\x00'::bytea)",
            "code_digest_key = 'mine'",
        ],
    )
    def test_no_digest_can_be_written(self, sql, refused, assignment):
        token, _, _ = mailed(AccountFactory())
        refused(f"UPDATE tokens SET {assignment} WHERE id = %s", [token.pk], match="written only when its e-mail")
        unmailed = live_token(account=AccountFactory())
        refused(f"UPDATE tokens SET {assignment} WHERE id = %s", [unmailed.pk], match="written only when its e-mail")

    def test_a_digest_chosen_at_insert_is_refused_and_the_secret_digest_is_the_databases(self, sql, refused):
        account = AccountFactory(active=True)
        refused(
            "INSERT INTO tokens (account, action, secret, code, code_digest, code_digest_key)"
            " VALUES (%s, 'password_recovery', NULL, NULL, sha256('\\x00'::bytea), 'mine')",
            [account.pk],
            match="their digests are written by the database",
        )
        (digest, secret) = sql(
            "INSERT INTO tokens (account, action, secret_digest) VALUES (%s, 'password_recovery', sha256('\\x00'::bytea))"
            " RETURNING secret_digest, secret",
            [account.pk],
        )[0]
        assert bytes(digest) == secret_digest(bytes(secret))

    def test_the_plain_values_cannot_be_emptied_or_given_back_by_hand(self, sql, refused):
        token, _, _ = mailed(AccountFactory())
        refused("UPDATE tokens SET code = '12345' WHERE id = %s", [token.pk], match="cannot be changed")
        unmailed = live_token(account=AccountFactory())
        refused("UPDATE tokens SET code = NULL, secret = NULL WHERE id = %s", [unmailed.pk], match="cannot be changed")

    def test_a_mailed_token_cannot_be_queued_again(self, sql, refused):
        token, _, _ = mailed(AccountFactory())
        for state in ("queued", "retrying"):
            refused(
                "UPDATE tokens SET mail_state = %s WHERE id = %s", [state, token.pk], match="cannot be mailed again"
            )

    def test_the_sent_mark_needs_the_claim(self, sql):
        token = live_token(account=AccountFactory())
        assert (
            sql("SELECT * FROM tokens_mark_sent(%s, gen_random_uuid(), sha256('\\x00'::bytea), 'k1')", [token.pk]) == []
        )
        token.refresh_from_db()
        assert token.secret is not None and token.code_digest is None

    def test_the_seeds_walkthrough_still_activates_a_mailed_token(self, sql, refused):
        account = AccountFactory()
        token, _, _ = mailed(account)
        sql("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token.pk])
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE
        refused("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token.pk], match="already been used")

    def test_a_mailed_token_that_expired_is_refused(self, sql, refused):
        token, _, _ = mailed(AccountFactory())
        expire(token)
        refused("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token.pk], match="has expired")

    def test_one_live_token_per_account_and_action_still(self, sql, refused):
        account = AccountFactory()
        token, _, _ = mailed(account)
        sql("INSERT INTO tokens (account, action) VALUES (%s, 'activation')", [account.pk])
        assert Token.objects.get(pk=token.pk).superseded_at is not None
        assert Token.objects.filter(account=account, consumed_at=None, superseded_at=None).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_dump_of_the_database_after_a_mail_run_holds_neither_the_link_nor_the_code():
    account = AccountFactory(login="jane")
    token, secret, code = mailed(account)
    raw = secret_from_text(secret)
    with connect_as_owner() as owner:
        tables = [
            name
            for (name,) in owner.execute(
                "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind = 'r'"
            )
        ]
        dump = {
            table: owner.execute(f"SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM {table} t").fetchone()[0]
            for table in tables
        }
    (token_row,) = [line for line in dump["tokens"].splitlines() if line.startswith(f"({token.pk},")]
    assert not field_equal_to(code, token_row)
    for table, text in dump.items():
        for encoded in encodings(raw):
            assert encoded not in text, table
        assert f",{code}," not in text and f"'{code}'" not in text, table
    # The e-mail's link still works.
    assert token_consume(secret=secret, actor=None).consumed_at is not None

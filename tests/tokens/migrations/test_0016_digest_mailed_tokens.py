"""The data migration that digests the tokens mailed before digests existed."""

import importlib
from types import SimpleNamespace

import pytest

from lifecycle.demo.factories import AccountFactory
from tests.support import connect_as_owner
from tokens.digests import code_digest, current_key_id
from tokens.models import Token
from tokens.selectors import live_token
from tokens.services import token_consume_code

migration = importlib.import_module("tokens.migrations.0016_digest_mailed_tokens")

# Committed rows, read by the owner's own connection as the migration's would be. Not the "owner" alias:
# Django would flush its every table after each test (the django-q2 schedules too).
pytestmark = pytest.mark.django_db(transaction=True)


def mailed_the_old_way(account) -> Token:
    """A token marked sent by the plain mark of before: its secret and code still in the row."""
    token = live_token(account=account)
    Token.objects.filter(pk=token.pk).update(mail_state="sent")
    return token


def run_migration(capsys) -> str:
    with connect_as_owner(autocommit=True) as owner:
        migration.digest_stored_tokens(None, SimpleNamespace(connection=owner))
    return capsys.readouterr().out


def test_mailed_tokens_keep_only_digests_and_their_codes_still_work(capsys, monkeypatch):
    monkeypatch.setattr(migration, "BATCH", 2)
    accounts = [AccountFactory(login=f"old{n}") for n in range(3)]
    tokens = [mailed_the_old_way(account) for account in accounts]
    waiting = live_token(account=AccountFactory())
    output = run_migration(capsys)
    assert "digested 2 of 3 stored tokens" in output and "digested 3 of 3 stored tokens" in output
    for token in tokens:
        row = Token.objects.get(pk=token.pk)
        assert (row.secret, row.code, row.code_digest_key) == (None, None, current_key_id())
        assert bytes(row.code_digest) == code_digest(token.pk, token.code)
    assert Token.objects.get(pk=waiting.pk).secret is not None  # not mailed yet: kept for its e-mail
    assert token_consume_code(identifier="old1", code=tokens[1].code, actor=None).consumed_at is not None


def test_run_again_it_finds_nothing_left(capsys):
    mailed_the_old_way(AccountFactory())
    run_migration(capsys)
    assert run_migration(capsys) == ""

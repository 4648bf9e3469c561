"""Retry mailing now: dead or retrying mail that is still valid becomes due at once."""

import pytest

from lifecycle.demo.factories import AccountFactory
from tests.support import expire
from tokens.mailroom.drain import drain
from tokens.mailroom.retry import retry_now
from tokens.models import MailState, Token
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db


def test_retry_now_makes_a_dead_mail_due_again(smtp_server):
    smtp_server.handler.refuse_recipients = "550 5.1.1 No such mailbox"
    token = live_token(account=AccountFactory())
    drain()
    smtp_server.handler.refuse_recipients = None
    assert retry_now(Token.objects.filter(pk=token.pk), actor=None) == 1
    assert drain().sent == 1
    token.refresh_from_db()
    assert token.mail_state == MailState.SENT


def test_retry_now_leaves_sent_and_expired_tokens_alone(smtp_server):
    sent = live_token(account=AccountFactory())
    drain()
    expired = live_token(account=AccountFactory())
    Token.objects.filter(pk=expired.pk).update(mail_state=MailState.DEAD)
    expire(expired)
    assert retry_now(Token.objects.filter(pk__in=[sent.pk, expired.pk]), actor=None) == 0


def test_retry_now_leaves_a_mailed_token_marked_dead_by_hand_alone(smtp_server):
    """Its row keeps only digests: it cannot be mailed again, and the action says so by counting it out."""
    token = live_token(account=AccountFactory())
    drain()
    Token.objects.filter(pk=token.pk).update(mail_state=MailState.DEAD)
    assert retry_now(Token.objects.filter(pk=token.pk), actor=None) == 0
    assert drain().claimed == 0

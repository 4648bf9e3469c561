"""Putting messages on the wire: the bytes written are the bytes Django's message writes."""

import secrets
from email.policy import compat32

import pytest
from django.core.mail import EmailMultiAlternatives

from lifecycle.demo.factories import AccountFactory
from tokens.mailroom.render import render_mail
from tokens.mailroom.wire import _POLICY, as_bytes
from tokens.models import TokenAction
from tokens.selectors import live_token
from tokens.services import token_request_mail


def serialised_both_ways(message: EmailMultiAlternatives) -> tuple[bytes, bytes]:
    mime = message.message()
    mime.set_boundary(f"=_{secrets.token_hex(16)}")
    return as_bytes(mime), mime.as_bytes(linesep="\r\n")


@pytest.mark.django_db
@pytest.mark.parametrize("login", ["jane", "a-login-long-enough-that-the-subject-runs-past-one-line-x"])
def test_a_token_e_mail_is_written_byte_for_byte_as_django_writes_it(login):
    account = AccountFactory(login=login, active=True)
    token_request_mail(identifier=account.email, action=TokenAction.PASSWORD_RECOVERY, actor=None)
    ours, djangos = serialised_both_ways(render_mail(live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)))
    assert ours == djangos


def test_headers_not_ascii_multi_line_or_long_are_folded_as_django_folds_them():
    message = EmailMultiAlternatives(
        subject="Réinitialisez votre mot de passe " + "x" * 80,
        body="Bonjour\n",
        from_email="Équipe <noreply@example.com>",
        to=["jane@example.com"],
        headers={"X-Long": "y" * 200, "X-Split": "a, b; c " * 20},
    )
    message.attach_alternative("<p>Bonjour</p>", "text/html")
    ours, djangos = serialised_both_ways(message)
    assert ours == djangos


@pytest.mark.parametrize(
    "value", ["", "a", "a  b", " lead", "trail ", "tab\there", "x" * 69, "x" * 70, "x" * 200, "é", "a\r\n b"]
)
def test_one_header_is_folded_as_compat32_folds_it(value):
    """69 characters after "Subject: " end at the 78th column: the longest header written as it is."""
    policy = compat32.clone(linesep="\r\n")
    assert _POLICY.fold_binary("Subject", value) == policy.fold_binary("Subject", value)

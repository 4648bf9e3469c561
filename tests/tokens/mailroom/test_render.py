"""What an e-mail says: the link (from PUBLIC_BASE_URL), the code and the expiry, per action."""

import pytest

from lifecycle.factories import AccountFactory
from tokens.links import secret_to_text
from tokens.mailroom.drain import drain
from tokens.models import TokenAction
from tokens.selectors import live_token
from tokens.services import token_request_mail

pytestmark = pytest.mark.django_db


def test_an_activation_e_mail_carries_the_link_the_code_and_the_expiry(smtp_server, settings):
    account = AccountFactory(login="jane", email="jane@example.com")
    token = live_token(account=account)
    result = drain()
    assert (result.claimed, result.sent, result.error) == (1, 1, None)
    (message,) = smtp_server.messages
    assert message["To"] == "jane@example.com"
    assert message["Subject"] == "Activate your account jane"
    assert message["Message-ID"] == f"<token-{token.pk}@127.0.0.1>"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    link = f"{settings.PUBLIC_BASE_URL}/activate/{secret_to_text(token.secret)}"
    for body in (text, html):
        assert link in body
        assert token.code in body
        assert "15 minutes" in body


def test_a_recovery_e_mail_links_to_the_recovery_page(smtp_server, settings):
    account = AccountFactory(active=True)
    token_request_mail(identifier=account.email, action=TokenAction.PASSWORD_RECOVERY, actor=None)
    drain()
    (message,) = smtp_server.messages
    token = live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)
    assert (
        f"{settings.PUBLIC_BASE_URL}/recover/{secret_to_text(token.secret)}"
        in message.get_body(("plain",)).get_content()
    )


def test_links_are_built_from_the_public_base_url_not_a_host_header(smtp_server, settings):
    settings.PUBLIC_BASE_URL = "https://accounts.example.org"
    AccountFactory()
    drain()
    assert "https://accounts.example.org/activate/" in smtp_server.messages[0].get_body(("plain",)).get_content()

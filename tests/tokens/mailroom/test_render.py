"""What an e-mail says: the link (from PUBLIC_BASE_URL), the code and the expiry with the validity
left when it is sent, per action."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite
from tokens.links import LANDING_PAGES, secret_to_text
from tokens.mailroom.drain import drain
from tokens.mailroom.render import ASK_AGAIN_PAGES, MailRenderer, page_path, render_mail, validity_left
from tokens.models import Token, TokenAction
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
        assert "about 15 minutes from when this e-mail was sent" in body  # mailed at once


def test_a_recovery_e_mail_links_to_the_recovery_page(smtp_server, settings):
    account = AccountFactory(active=True)
    token_request_mail(identifier=account.email, action=TokenAction.PASSWORD_RECOVERY, actor=None)
    token = live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)  # read before the mail empties it
    drain()
    (message,) = smtp_server.messages
    assert (
        f"{settings.PUBLIC_BASE_URL}/recover/{secret_to_text(token.secret)}"
        in message.get_body(("plain",)).get_content()
    )


def test_links_are_built_from_the_public_base_url_not_a_host_header(smtp_server, settings):
    settings.PUBLIC_BASE_URL = "https://accounts.example.org"
    AccountFactory()
    drain()
    assert "https://accounts.example.org/activate/" in smtp_server.messages[0].get_body(("plain",)).get_content()


def mailed_late(token: Token, *, issued_ago: timedelta, left: timedelta) -> datetime:
    """Age ``token`` as if issued ``issued_ago`` and expiring ``left`` from now (the owner's key
    rewrites a token's fixed times); returns its new expiry."""
    now = timezone.now()
    with transaction.atomic(), history_rewrite():
        Token.objects.filter(pk=token.pk).update(created_at=now - issued_ago, expires_at=now + left)
    token.refresh_from_db()
    return token.expires_at


def bodies(message) -> tuple[str, str]:
    return message.get_body(("plain",)).get_content(), message.get_body(("html",)).get_content()


def test_an_e_mail_sent_late_states_the_validity_left_not_the_lifetime(smtp_server):
    """Mailed 9 minutes late, it says about 6 minutes, not "15 minutes"."""
    expires_at = mailed_late(
        live_token(account=AccountFactory()), issued_ago=timedelta(minutes=9), left=timedelta(minutes=6)
    )
    assert drain().sent == 1
    (message,) = smtp_server.messages
    until = f"until {expires_at:%H:%M} UTC on {expires_at:%Y-%m-%d}: about 6 minutes from when this e-mail was sent"
    for body in bodies(message):
        assert until in body
        assert "15 minutes" not in body


def test_an_e_mail_sent_with_seconds_left_says_less_than_a_minute_and_where_to_ask_again(smtp_server, settings):
    mailed_late(
        live_token(account=AccountFactory()), issued_ago=timedelta(minutes=14, seconds=30), left=timedelta(seconds=30)
    )
    assert drain().sent == 1
    text, html = bodies(smtp_server.messages[0])
    for body in (text, html):
        assert "less than a minute from when this e-mail was sent" in body
    assert f"ask for a new e-mail at {settings.PUBLIC_BASE_URL}/resend/" in text
    assert f'<a href="{settings.PUBLIC_BASE_URL}/resend/">ask for a new e-mail</a>' in html


def test_a_recovery_e_mail_says_where_to_ask_for_a_new_one(smtp_server, settings):
    account = AccountFactory(active=True)
    token_request_mail(identifier=account.email, action=TokenAction.PASSWORD_RECOVERY, actor=None)
    drain()
    assert f"ask for a new e-mail at {settings.PUBLIC_BASE_URL}/recover/" in bodies(smtp_server.messages[0])[0]


@pytest.mark.parametrize(
    ("left", "words"),
    [
        (timedelta(seconds=1), "less than a minute"),
        (timedelta(seconds=59), "less than a minute"),
        (timedelta(seconds=60), "about 1 minute"),
        (timedelta(minutes=5, seconds=50), "about 6 minutes"),
        (timedelta(minutes=14, seconds=59), "about 15 minutes"),
        (timedelta(minutes=119), "about 119 minutes"),
        (timedelta(hours=24), "about 24 hours"),
    ],
)
def test_the_validity_left_in_words(left, words):
    assert validity_left(left) == words


def test_a_restore_e_mail_names_the_closed_account_and_links_to_the_restore_page(smtp_server, settings):
    account = AccountFactory(login="jane", email="jane@example.com", deprovisioned=True)
    token_request_mail(identifier="jane@example.com", action=TokenAction.RESTORE, actor=None)
    token = live_token(account=account, action=TokenAction.RESTORE)
    result = drain()
    assert (result.sent, result.error) == (1, None)
    (message,) = smtp_server.messages
    assert message["Subject"] == "Your account jane was closed: restore it instead?"
    for body in bodies(message):
        assert f"{settings.PUBLIC_BASE_URL}/restore/{secret_to_text(token.secret)}" in body
        assert f"closed on {account.deprovisioned_at:%Y-%m-%d}" in body
        assert f"{settings.PUBLIC_BASE_URL}/signup/" in body  # where to ask again
        assert token.code not in body  # no page takes a restore code


def test_every_e_mail_carries_the_organisations_brand(smtp_server, settings):
    settings.SITE_NAME = "Example Org"
    settings.SITE_ACCENT_COLOUR = "#7a1f5c"
    AccountFactory(login="jane", email="jane@example.com")
    drain()
    (message,) = smtp_server.messages
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert text.replace("\r\n", "\n").rstrip().endswith("-- \nExample Org")
    assert "Example Org" in html and "#7a1f5c" in html
    assert f'src="{settings.PUBLIC_BASE_URL}/static/lifecycle/logo.svg"' in html  # absolute: read away from the site
    settings.SITE_LOGO_URL = "https://cdn.example.org/logo.png"
    token_request_mail(identifier="jane", action=TokenAction.ACTIVATION, actor=None)
    drain()
    assert 'src="https://cdn.example.org/logo.png"' in smtp_server.messages[-1].get_body(("html",)).get_content()


def test_one_batchs_renderer_writes_each_e_mail_as_it_is_written_alone():
    """What a batch's e-mails share is looked up once (tokens/mailroom/render.py, MailRenderer); what is
    each one's own still is."""
    jane, john = AccountFactory(login="jane"), AccountFactory(login="john", active=True)
    token_request_mail(identifier=john.email, action=TokenAction.PASSWORD_RECOVERY, actor=None)
    tokens = [live_token(account=jane), live_token(account=john, action=TokenAction.PASSWORD_RECOVERY)]
    now = timezone.now()
    renderer = MailRenderer()
    for token in [*tokens, *reversed(tokens)]:
        batch, alone = renderer.render(token, now=now), render_mail(token, now=now)
        assert (batch.subject, batch.body, batch.alternatives, batch.to, batch.extra_headers) == (
            alone.subject,
            alone.body,
            alone.alternatives,
            alone.to,
            alone.extra_headers,
        )
    assert renderer.render(tokens[0], now=now).body != renderer.render(tokens[1], now=now).body


def test_e_mails_of_one_action_in_one_batch_each_carry_their_own_login_link_and_code():
    """Three activations and three recoveries interleaved in one batch: each e-mail is what it is alone,
    so no person's link or code reaches another (the templates' shared parts are laid out once)."""
    accounts = [AccountFactory(login=f"person{n}", active=n >= 3) for n in range(6)]
    for account in accounts[3:]:
        token_request_mail(identifier=account.email, action=TokenAction.PASSWORD_RECOVERY, actor=None)
    tokens = [live_token(account=account, action=TokenAction.PASSWORD_RECOVERY) for account in accounts[3:]]
    tokens = [item for pair in zip([live_token(account=a) for a in accounts[:3]], tokens, strict=True) for item in pair]
    now = timezone.now()
    renderer = MailRenderer()
    bodies = set()
    for token in tokens:
        batch, alone = renderer.render(token, now=now), render_mail(token, now=now)
        assert (batch.subject, batch.body, batch.alternatives, batch.to) == (
            alone.subject,
            alone.body,
            alone.alternatives,
            alone.to,
        )
        for body in (batch.body, batch.alternatives[0][0]):
            assert secret_to_text(token.secret) in body and token.code in body and token.account.login in body
        bodies.add(batch.body)
    assert len(bodies) == len(tokens)


def test_each_e_mail_of_a_batch_states_its_own_expiry_in_the_active_time_zone():
    """The batch's renderer keeps each formatted time by value and time zone: tokens expiring at other
    times, or a time zone activated between two e-mails, each get their own."""
    tokens = [live_token(account=AccountFactory()), live_token(account=AccountFactory())]
    mailed_late(tokens[1], issued_ago=timedelta(minutes=9), left=timedelta(minutes=6))
    now = timezone.now()
    renderer = MailRenderer()
    for zone in ["UTC", "Asia/Kolkata", "America/New_York", "UTC"]:
        with timezone.override(ZoneInfo(zone)):
            for token in [*tokens, *tokens]:
                local = timezone.localtime(token.expires_at)
                for body in (renderer.render(token, now=now).body, renderer.render(token, now=now).alternatives[0][0]):
                    assert f"until {local:%H:%M} {local.tzname()} on {local:%Y-%m-%d}: " in body


@pytest.mark.parametrize("action", list(TokenAction))
def test_the_e_mails_pages_are_reversed_as_the_site_serves_them(action):
    """The mailroom reverses tokens/urls.py alone when it has the page (page_path): the site's own paths."""
    for name, args in [(LANDING_PAGES.get(action), ["x" * 43]), (ASK_AGAIN_PAGES.get(action), [])]:
        if name is not None:
            assert page_path(name, *args) == reverse(name, args=args)

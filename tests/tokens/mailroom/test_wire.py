"""Putting messages on the wire: the bytes written are the bytes Django's message writes."""

import re
import secrets
import socket
import threading
from email.policy import compat32
from unittest import mock

import pytest
from django.core.mail import BadHeaderError, EmailMultiAlternatives
from django.core.mail.backends.smtp import EmailBackend as SMTPBackend
from django.core.mail.message import sanitize_address

from lifecycle.demo.factories import AccountFactory
from tokens.mailroom.drain import drain
from tokens.mailroom.render import render_mail
from tokens.mailroom.wire import _POLICY, as_bytes, envelope_address, message_bytes, wire_for
from tokens.models import MailState, Token, TokenAction
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


def written_both_ways(message: EmailMultiAlternatives) -> tuple[bytes, bytes]:
    """message_bytes() and Django's own writing of the same message, with the same boundary."""
    with mock.patch("tokens.mailroom.wire.secrets.token_hex", return_value="0123456789abcdef" * 2):
        ours = message_bytes(message)
    mime = message.message()
    if mime.is_multipart():
        mime.set_boundary("=_" + "0123456789abcdef" * 2)
    return ours, mime.as_bytes(linesep="\r\n")


def alternatives(
    subject="Activate your account jane", body="Hello jane,\n\n-- \nLifecycle\n", html="<p>Hello</p>\n", **kwargs
):
    headers = kwargs.pop("headers", {"Message-ID": "<token-1@example.com>", "X-Lifecycle-Token": "1"})
    kwargs.setdefault("to", ["jane@example.com"])
    message = EmailMultiAlternatives(subject=subject, body=body, headers=headers, **kwargs)
    message.attach_alternative(html, "text/html")
    return message


DATED = {"Date": "Fri, 27 Nov 2026 10:55:31 -0000", "Message-ID": "<token-1@example.com>"}


@pytest.mark.parametrize(
    "message",
    [
        alternatives(headers=DATED),
        alternatives(body="Bonjour Zoë,\r\nune ligne\rune autre\n\n", html="<p>Zoë</p>", headers=DATED),
        alternatives(body="no line break at the end", html="", headers=DATED),
        alternatives(body=".a dot\nFrom here\n", headers=DATED),
        alternatives(body="x" * 998 + "\n", html="é" * 499 + "\n", headers=DATED),
        alternatives(body="x" * 999 + "\n", headers=DATED),  # quoted-printable
        alternatives(html="é" * 500, headers=DATED),  # quoted-printable
        alternatives(subject="s" * 69, headers=DATED),
        alternatives(subject="s" * 70, headers=DATED),
        alternatives(subject="word " * 13 + "last", headers=DATED),
        alternatives(subject="word " * 13 + "last1", headers=DATED),  # folded
        alternatives(subject="a; b, c =?utf-8?q?x?= " + "w " * 20 + "end", headers=DATED),
        alternatives(subject="two  spaces", headers=DATED),
        alternatives(subject="Réinitialisez", headers=DATED),
        alternatives(subject="", headers=DATED),
        alternatives(headers={**DATED, "X-Long": "y" * 200}),
        alternatives(headers={**DATED, "X-Split": "a, b; c " * 20}),
        alternatives(headers={**DATED, "X-Lifecycle-Token": 7}),
        alternatives(headers={**DATED, "To": "other@example.com"}),
        alternatives(headers={**DATED, "Content-Transfer-Encoding": "7bit"}),
        alternatives(from_email="Équipe <noreply@example.com>", headers=DATED),
        alternatives(from_email="Lifecycle <noreply@example.com>", cc=["c@example.com"], headers=DATED),
        alternatives(headers={"Date": DATED["Date"]}),  # Django makes a Message-ID
        alternatives(subject="a\vb\fc\x1cd\x1de\x1ef", headers=DATED),  # control characters: Django's way
        alternatives(subject="a\x00b\x7fc", headers=DATED),
        alternatives(to=[], bcc=["hidden@example.com"], headers=DATED),  # no To header at all
    ],
)
def test_a_message_is_written_as_django_writes_it(message):
    """The e-mails' own writer (an ASCII one-line header, a text and an HTML part), or Django's for
    anything else: the same bytes either way."""
    ours, djangos = written_both_ways(message)
    if "Message-ID" not in message.extra_headers:
        ours, djangos = (re.sub(rb"Message-ID: [^\r]*", b"", written) for written in (ours, djangos))
    assert ours == djangos


def test_a_token_e_mail_is_written_by_its_own_writer_with_the_time_django_would_give_it(settings):
    """The Date header, unset, is the moment of writing as Django states it (in local time if so set)."""
    settings.EMAIL_USE_LOCALTIME = True
    message = alternatives()
    with mock.patch("tokens.mailroom.wire.formatdate", return_value="Fri, 27 Nov 2026 11:55:31 +0100") as formatdate:
        ours, _ = written_both_ways(message)
    formatdate.assert_called_once_with(localtime=True)
    message.extra_headers = {"Date": "Fri, 27 Nov 2026 11:55:31 +0100", **message.extra_headers}
    assert ours == written_both_ways(message)[1]


@pytest.mark.django_db
def test_a_token_e_mail_is_written_by_its_own_writer():
    """A token's e-mail (its subject short enough for one line) does not fall back to Django's slower
    writing."""
    account = AccountFactory(login="jane", active=True)
    token_request_mail(identifier=account.email, action=TokenAction.PASSWORD_RECOVERY, actor=None)
    message = render_mail(live_token(account=account, action=TokenAction.PASSWORD_RECOVERY))
    with mock.patch("tokens.mailroom.wire.as_bytes", side_effect=AssertionError("written by Django's generator")):
        ours = message_bytes(message)
    assert ours.startswith(b"Content-Type: multipart/alternative;")


@pytest.mark.parametrize("value", ["a\rb", "a\nb", "a\r\nBcc: x@example.com"])
def test_a_header_holding_a_line_break_is_refused_as_django_refuses_it(value):
    for message in (alternatives(subject=value), alternatives(headers={**DATED, "X-Lifecycle-Token": value})):
        with pytest.raises(BadHeaderError):
            message_bytes(message)


class EnvelopeAtOnce:
    """An SMTP server offering PIPELINING that answers the envelope only once it has MAIL, RCPT and DATA
    together: a client waiting for each answer before its next command gets nothing, and times out."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.bodies: list[bytes] = []
        self.envelopes: list[list[bytes]] = []
        threading.Thread(target=self._session, daemon=True).start()

    def _session(self):
        client, _ = self.sock.accept()
        with client, client.makefile("rb") as reader:
            client.sendall(b"220 at once ESMTP\r\n")
            reader.readline()  # EHLO
            client.sendall(b"250-at once\r\n250-PIPELINING\r\n250 8BITMIME\r\n")
            while command := reader.readline():
                if command.upper().startswith(b"QUIT"):
                    client.sendall(b"221 bye\r\n")
                    return
                envelope = [command]
                while not envelope[-1].upper().startswith(b"DATA"):
                    envelope.append(reader.readline())
                self.envelopes.append(envelope)
                client.sendall(b"250 ok\r\n" * (len(envelope) - 1) + b"354 go ahead\r\n")
                body = b""
                while (line := reader.readline()) not in (b".\r\n", b""):
                    body += line
                self.bodies.append(body)
                client.sendall(b"250 queued\r\n")


@pytest.mark.django_db
def test_to_a_server_offering_pipelining_the_envelope_goes_out_at_once(settings):
    """MAIL, RCPT and DATA in one write (RFC 2920): one round trip for the envelope instead of three."""
    server = EnvelopeAtOnce()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 2
    accounts = AccountFactory.create_batch(2)
    result = drain()
    assert (result.sent, result.error) == (2, None)
    assert sorted(re.search(rb"To: (\S+)", body).group(1).decode() for body in server.bodies) == sorted(
        account.email for account in accounts
    )
    assert set(Token.objects.values_list("mail_state", flat=True)) == {MailState.SENT}


@pytest.mark.django_db
def test_a_recipient_holding_a_line_break_smuggles_no_command_into_a_pipelined_envelope():
    server = EnvelopeAtOnce()
    backend = SMTPBackend(host="127.0.0.1", port=server.port, timeout=2, fail_silently=False)
    backend.open()
    wire = wire_for(backend)
    smuggling = "to@example.com>\r\nRCPT TO:<other@example.com"
    wire.start(("from@example.com", [smuggling], b"Subject: x\r\n\r\nbody\r\n"), before_body=lambda: None)
    wire.finish()
    backend.close()
    assert [line for line in server.envelopes[0] if line.upper().startswith(b"RCPT")] == [
        b"rcpt TO:<to@example.com>\r\n"
    ]


@pytest.mark.parametrize(
    "address",
    [
        "jane@example.com",
        "Jane.Doe+tag_1%x-y@Sub-1.EXAMPLE.org",
        "a@b",
        "x@" + "d" * 63 + ".com",
        "x@" + "d" * 64 + ".com",  # a label over 63: the idna codec refuses it
        "x@" + ".".join(["d" * 60] * 5),  # a domain over 253
        "x@a..b",
        "x@.a",
        ".x@a.b",
        "x.@a.b",
        "x..y@a.b",
        "Jane <jane@example.com>",
        '"quoted local"@example.com',
        "zoë@example.com",
        "jane@exämple.com",
        "jane@example.com\r\nBcc: x@example.com",
        "jane@example.com\n",
        "a!b@example.com",
        "-@-.-",
        "%+_@1.2.3.4",
        "",
        "no-at-sign",
    ],
)
def test_an_envelope_address_is_sanitised_as_django_sanitises_it(address):
    """The same address, or the same refusal, as Django's sanitize_address()."""
    try:
        djangos = sanitize_address(address, "utf-8")
    except ValueError as error:
        with pytest.raises(type(error)):
            envelope_address(address, "utf-8")
    else:
        assert envelope_address(address, "utf-8") == djangos

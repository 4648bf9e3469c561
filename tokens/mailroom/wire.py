"""Putting messages on the wire: one at a time through any Django mail backend, or overlapped with
the next message's building over Django's SMTP backend.

A plain SMTP client waits for the server's last answer (after the body, while the server parses and
queues the message) with nothing to do, then builds the next message while the server waits. Over
Django's SMTP backend the drain writes a message's body, builds the next message, and only then reads
the answer: the two costs overlap on the two sides of the connection (one after the other, the drain
reaches about half the rate of a bare smtplib loop). Still one message is in flight at a time: the
next one starts only after the answer to this one was read and its mark sent (tokens/mailroom/claim.py's
SentMarks), and its body goes out only once that mark's answer is in, so a killed run re-sends at
most one.
"""

import re
import secrets
import smtplib
from collections.abc import Callable
from email.generator import BytesGenerator
from email.policy import Compat32
from email.utils import formatdate
from io import BytesIO
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.backends.smtp import EmailBackend as SMTPBackend
from django.core.mail.message import RFC5322_EMAIL_LINE_LENGTH_LIMIT, sanitize_address

# A line of the body that starts with a dot gets a second one (RFC 5321 4.5.2), as smtplib.data() does.
_LEADING_DOT = re.compile(rb"(?m)^\.")


class _ShortHeadersAsTheyAre(Compat32):
    """Django's messages' policy (compat32), writing a header that is ASCII, one line and short enough
    as it is: email.header.Header would write it the same (tests/tokens/mailroom/test_wire.py), after
    splitting and measuring it, about half the cost of serialising a message. Any other header is
    folded by compat32 itself."""

    def _fold(self, name, value, sanitize):
        if (
            isinstance(value, str)
            and value.isascii()
            and "\r" not in value
            and "\n" not in value
            and len(name) + 2 + len(value) <= self.max_line_length
        ):
            return f"{name}: {value}{self.linesep}"
        return super()._fold(name, value, sanitize)


_POLICY = _ShortHeadersAsTheyAre(linesep="\r\n")


class OneAtATime:
    """Any mail backend (locmem in tests, console, file): each message is sent whole."""

    def __init__(self, backend: BaseEmailBackend):
        self.backend = backend

    def prepare(self, message: EmailMessage) -> EmailMessage:
        return message

    def start(self, message: EmailMessage, *, before_body: Callable[[], None]) -> None:
        before_body()
        self.backend.send_messages([message])

    def finish(self) -> None:
        """Nothing is left in flight: send_messages() waited for the answer."""


class Overlapped:
    """Django's SMTP backend, whose last answer to a message is read by finish(), after the caller
    built the next message. Envelope and body are made as the backend's own _send() makes them; the
    commands and the errors raised are smtplib.sendmail()'s, cut in two after the body is written."""

    def __init__(self, backend: SMTPBackend):
        self.smtp: smtplib.SMTP = backend.connection
        self._senders: dict[tuple[str, str], str] = {}

    def prepare(self, message: EmailMessage) -> tuple[str, list[str], bytes]:
        """The envelope and the body as written on the wire; raises what cannot be sent (ValueError)."""
        encoding = message.encoding or settings.DEFAULT_CHARSET
        if (message.from_email, encoding) not in self._senders:  # every message of a batch has the same
            self._senders[message.from_email, encoding] = sanitize_address(message.from_email, encoding)
        sender = self._senders[message.from_email, encoding]
        recipients = [envelope_address(address, encoding) for address in message.recipients()]
        return sender, recipients, message_bytes(message)

    def start(self, prepared: tuple[str, list[str], bytes], *, before_body: Callable[[], None]) -> None:
        """MAIL, RCPT and DATA, each answered, ``before_body()``, then the body, whose answer finish()
        reads. When ``before_body()`` raises, the connection is closed and no message was sent."""
        sender, recipients, body = prepared
        smtp = self.smtp
        smtp.ehlo_or_helo_if_needed()
        options = [f"size={len(body)}"] if smtp.does_esmtp and smtp.has_extn("size") else []
        if smtp.does_esmtp and smtp.has_extn("pipelining"):
            self._pipelined_envelope(sender, options, recipients)
        else:
            self._envelope(sender, options, recipients)
        try:
            before_body()
        except BaseException:
            # The server is reading a body: hanging up is the one way to stop the message (RFC 5321 3.8).
            smtp.close()
            raise
        body = _LEADING_DOT.sub(b"..", body)
        smtp.send(body + (b"" if body.endswith(b"\r\n") else b"\r\n") + b".\r\n")

    def _envelope(self, sender: str, options: list[str], recipients: list[str]) -> None:
        """MAIL, RCPT and DATA one after the other, each answer read before the next command."""
        smtp = self.smtp
        code, answer = smtp.mail(sender, options)
        if code != 250:
            self._give_up(code)
            raise smtplib.SMTPSenderRefused(code, answer, sender)
        refused = {}
        for recipient in recipients:
            code, answer = smtp.rcpt(recipient)
            if code not in (250, 251):
                refused[recipient] = (code, answer)
            if code == 421:
                smtp.close()
                raise smtplib.SMTPRecipientsRefused(refused)
        if len(refused) == len(recipients):
            self._give_up(code)
            raise smtplib.SMTPRecipientsRefused(refused)
        smtp.putcmd("data")
        code, answer = smtp.getreply()
        if code != 354:
            self._give_up(code)
            raise smtplib.SMTPDataError(code, answer)

    def _pipelined_envelope(self, sender: str, options: list[str], recipients: list[str]) -> None:
        """MAIL, RCPT and DATA written at once to a server that offers PIPELINING (RFC 2920), then their
        answers read in turn and judged as _envelope() judges them: one round trip instead of three."""
        smtp = self.smtp
        commands = [
            f"mail FROM:{smtplib.quoteaddr(sender)}{''.join(f' {option}' for option in options)}",
            *(f"rcpt TO:{smtplib.quoteaddr(recipient)}" for recipient in recipients),
            "data",
        ]
        # quoteaddr() writes an address holding a line break as its parsed address, or <>, as for mail() and
        # rcpt(); the lines are encoded whole before any is written.
        smtp.send("".join(f"{command}\r\n" for command in commands))
        answers = []
        for _ in commands:
            answers.append(smtp.getreply())
            if answers[-1][0] == 421:  # the server is closing the connection: no further answers come
                smtp.close()
                break
        code, answer = answers[0]
        if code != 250:
            self._give_up_pipelined(code, answers, len(commands))
            raise smtplib.SMTPSenderRefused(code, answer, sender)
        refused = {}
        for recipient, (code, answer) in zip(recipients, answers[1:], strict=False):  # then DATA's answer
            if code not in (250, 251):
                refused[recipient] = (code, answer)
            if code == 421:
                raise smtplib.SMTPRecipientsRefused(refused)
        if len(refused) == len(recipients):
            self._give_up_pipelined(code, answers, len(commands))
            raise smtplib.SMTPRecipientsRefused(refused)
        code, answer = answers[-1]
        if code != 354:
            self._give_up(code)
            raise smtplib.SMTPDataError(code, answer)

    def _give_up_pipelined(self, code: int, answers: list[tuple[int, bytes]], commands: int) -> None:
        if self.smtp.sock is None:  # closed on a 421
            return
        if len(answers) == commands and answers[-1][0] == 354:
            # DATA was taken though the envelope was not: the server waits for a body, and hanging up
            # is the one way to stop it (RFC 5321 3.8).
            self.smtp.close()
            return
        self._give_up(code)

    def finish(self) -> None:
        """Read the answer to the body start() wrote: the server accepted the message, or this raises."""
        code, answer = self.smtp.getreply()
        if code != 250:
            self._give_up(code)
            raise smtplib.SMTPDataError(code, answer)

    def _give_up(self, code: int) -> None:
        # As smtplib: 421 means the server is closing the connection; anything else resets the transaction.
        if code == 421:
            self.smtp.close()
            return
        try:
            self.smtp.rset()
        except smtplib.SMTPServerDisconnected:
            pass  # the next message finds the connection gone, and says so


def message_bytes(message: EmailMessage) -> bytes:
    """``message.message().as_bytes(linesep="\\r\\n")``, the same bytes, with a random boundary."""
    # 128 random bits cannot occur in the parts, so the generator need not search them for its own
    # guess (a regular expression compiled for each message: a tenth of its cost).
    boundary = f"=_{secrets.token_hex(16)}"
    written = _alternatives_as_bytes(message, boundary)
    if written is not None:
        return written
    mime = message.message()
    if mime.is_multipart():
        mime.set_boundary(boundary)
    return as_bytes(mime)


# Headers whose value Django's message() makes or changes itself: given as extra headers, Django writes
# them its own way, and _alternatives_as_bytes() leaves such a message to it.
_HEADERS_DJANGO_WRITES = {"from", "to", "cc", "reply-to", "subject", "content-type", "mime-version"}
# A control character other than a tab: CR and LF (refused), and any other, left to Django's writer
# whatever it makes of it (a token's headers never hold one).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# A line break as the generator finds one (email.generator.NLCRE); each is written as CRLF.
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def _alternatives_as_bytes(message: EmailMessage, boundary: str) -> bytes | None:
    """The bytes of a token's e-mail (a text body and its HTML alternative, utf-8, each header ASCII and
    short), written straight from its parts as compat32 writes Django's message of them
    (tests/tokens/mailroom/test_wire.py compares both); None for any other message. Building the MIME
    objects and walking them through the generator is about nine tenths of the cost of writing one."""
    if (
        type(message) is not EmailMultiAlternatives
        or message.attachments
        or message.cc
        or message.reply_to
        or not message.body
        or not message.to  # Django then writes no To header at all
        or message.content_subtype != "plain"
        or message.alternative_subtype != "alternative"
        or len(message.alternatives) != 1
        or message.alternatives[0].mimetype != "text/html"
        or (message.encoding or settings.DEFAULT_CHARSET) != "utf-8"
        or any(name.lower() in _HEADERS_DJANGO_WRITES for name in message.extra_headers)
    ):
        return None
    # email.header.Header writes a subject as it is when it is one short ASCII line, as the others.
    headers = [
        ("Subject", message.subject),
        ("From", message.from_email),
        ("To", ", ".join(str(to) for to in message.to)),
    ]
    extra_names = {name.lower() for name in message.extra_headers}
    if "date" not in extra_names:
        headers.append(("Date", formatdate(localtime=settings.EMAIL_USE_LOCALTIME)))
    if "message-id" not in extra_names:
        return None  # Django makes one
    headers.extend(message.extra_headers.items())
    written = [b'Content-Type: multipart/alternative;\r\n boundary="', boundary.encode(), b'"\r\nMIME-Version: 1.0\r\n']
    for name, value in headers:
        value = str(value)
        if not value.isascii() or _CONTROL.search(value) or len(name) + 2 + len(value) > _POLICY.max_line_length:
            return None  # encoded, refused, split or folded: Django's way
        written.append(f"{name}: {value}\r\n".encode())
    for subtype, text in (("plain", message.body), ("html", message.alternatives[0].content)):
        text = str(text)
        if any(
            len(line.encode(errors="surrogateescape")) > RFC5322_EMAIL_LINE_LENGTH_LIMIT for line in text.splitlines()
        ):
            return None  # quoted-printable
        written += [
            b"\r\n--",
            boundary.encode(),
            f'\r\nContent-Type: text/{subtype}; charset="utf-8"\r\nMIME-Version: 1.0\r\n'
            f"Content-Transfer-Encoding: {'7bit' if text.isascii() else '8bit'}\r\n\r\n".encode(),
            _LINE_BREAK.sub(b"\r\n", text.encode()),
        ]
    written += [b"\r\n--", boundary.encode(), b"--\r\n"]
    return b"".join(written)


# An address sanitize_address() gives back as it is: a dot-atom of letters, digits and ._%+- at a domain
# of letters, digits and hyphens in labels of 1 to 63 characters (the idna codec's limit).
_PLAIN_ADDRESS = re.compile(r"[A-Za-z0-9_%+-]+(?:\.[A-Za-z0-9_%+-]+)*@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\Z")


def envelope_address(address: str, encoding: str) -> str:
    """sanitize_address(address, encoding), without parsing an address it would give back unchanged
    (parsing is about a third of the cost of preparing a message)."""
    if isinstance(address, str) and _PLAIN_ADDRESS.match(address):
        return address
    return sanitize_address(address, encoding)


def as_bytes(mime) -> bytes:
    """``mime.as_bytes(linesep="\\r\\n")``, as Django's message writes itself, the same bytes sooner."""
    written = BytesIO()
    BytesGenerator(written, mangle_from_=False, policy=_POLICY).flatten(mime, linesep="\r\n")
    return written.getvalue()


def wire_for(backend: BaseEmailBackend) -> Any:
    return Overlapped(backend) if isinstance(backend, SMTPBackend) else OneAtATime(backend)

"""Sending a claimed batch over one SMTP connection, recording each token's outcome as it happens."""

from __future__ import annotations

import smtplib
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core.mail import get_connection
from django.utils import timezone

from tokens.mailroom.claim import Claim, SentMarks, mark_expired, mark_failed, renew_lease
from tokens.mailroom.render import MailRenderer
from tokens.mailroom.wire import wire_for
from tokens.models import MailState, Token

if TYPE_CHECKING:
    from tokens.mailroom.drain import DrainResult

# Raised while building or addressing one message, before anything reaches the server: the idna
# codec on a domain label over 63 characters, an address or header holding CR/LF (ValueError, and
# UnicodeError is one), an address the server cannot take without SMTPUTF8.
UNSENDABLE = (ValueError, smtplib.SMTPNotSupportedError)


def send_batch(batch: list[Token], *, claim: Claim, result: DrainResult) -> None:
    backend = get_connection(fail_silently=False)
    marks = SentMarks(claim)
    try:
        backend.open()
    except OSError as error:  # smtplib's errors are OSErrors too: refused, timed out, bad greeting
        result.error = f"SMTP server unreachable: {_describe(error)}"
        for token in batch:
            _failed(token, marks=marks, reason=result.error, permanent=False, result=result)
        return
    wire = wire_for(backend)
    renderer = MailRenderer()
    held = {token.pk for token in batch}
    # The token whose message the server has whole but has not answered yet (tokens/mailroom/wire.py).
    in_flight: Token | None = None
    unrecorded = 0  # batch[unrecorded:] has no outcome yet
    try:
        for position, token in enumerate(batch):
            unrecorded = position
            if claim.running_out():
                marks.collect()
                held = renew_lease(claim, [in_flight, *batch[position:]] if in_flight else batch[position:])
            if token.pk not in held:  # another run took it over after our lease ran out: it decides
                result.lost_claims += 1
                continue
            now = timezone.now()
            if token.expires_at <= now:
                # Valid when claimed, expired while the batch went out (a slow server, a long batch).
                marks.collect()
                if mark_expired(token, claim=claim):
                    result.expired += 1
                else:
                    result.lost_claims += 1
                continue
            message = _attempt(token, _build, wire, renderer, token, now, marks=marks, result=result)
            if message is _FAILED:
                continue
            # Built while the server took the previous message: its answer now, then this message.
            if in_flight is not None:
                _answered(in_flight, wire, marks=marks, result=result)
                in_flight = None
            # The message goes out only once the last mark has landed: a mark refused (a lock timeout, a
            # terminated session) leaves one delivered e-mail unmarked, not two.
            if _attempt(token, _start, wire, message, marks, marks=marks, result=result) is not _FAILED:
                in_flight = token
        unrecorded = len(batch)
        if in_flight is not None:
            _answered(in_flight, wire, marks=marks, result=result)
    except ConnectionLost as lost:
        # This message and the rest of the batch wait for their backoff.
        result.error = str(lost)
        for unsent in [in_flight, *batch[unrecorded:]] if in_flight else batch[unrecorded:]:
            _failed(unsent, marks=marks, reason=result.error, permanent=False, result=result)
    finally:
        try:
            backend.close()
        except OSError:
            pass
        marks.collect()
        result.sent += marks.matched
        # A run whose lease ran out counts nothing: the run that took the token over decides.
        result.lost_claims += marks.unmatched


class ConnectionLost(Exception):
    """The SMTP connection is gone: no message of the batch can go out over it any more."""


_FAILED = object()


def _attempt(token: Token, step: Callable[..., Any], *args: Any, marks: SentMarks, result: DrainResult) -> Any:
    """Run one step of sending ``token``'s message: its value, or _FAILED once the token's failure is
    recorded. Raises ConnectionLost when the connection is gone."""
    try:
        return step(*args)
    except UNSENDABLE as error:
        # This message can never be sent (an address stored before the database refused such
        # addresses: accounts/sql/0007_address_rules.sql); the rest of the batch goes on.
        reason = f"cannot be sent to this address: {_describe(error)}"
        _failed(token, marks=marks, reason=reason, permanent=True, result=result)
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPResponseException) as error:
        code, reason = _smtp_answer(error)
        _failed(token, marks=marks, reason=reason, permanent=500 <= code < 600, result=result)
    except OSError as error:
        raise ConnectionLost(f"SMTP connection lost: {_describe(error)}") from error
    return _FAILED


def _start(wire, message: Any, marks: SentMarks) -> None:
    wire.start(message, before_body=marks.collect)


def _build(wire, renderer: MailRenderer, token: Token, now: datetime) -> Any:
    return wire.prepare(renderer.render(token, now=now))


def _answered(token: Token, wire, *, marks: SentMarks, result: DrainResult) -> None:
    """Read the server's answer to ``token``'s message and record it."""
    if _attempt(token, wire.finish, marks=marks, result=result) is _FAILED:
        return
    marks.mark(token)
    result.last_seq = max(result.last_seq or 0, token.pk)


def _failed(token: Token, *, marks: SentMarks, reason: str, permanent: bool, result: DrainResult) -> None:
    marks.collect()
    state = mark_failed(token, claim=marks.claim, reason=reason, permanent=permanent)
    if state == MailState.DEAD:
        result.dead += 1
    elif state == MailState.RETRYING:
        result.retrying += 1
    else:
        result.lost_claims += 1
    result.last_seq = max(result.last_seq or 0, token.pk)


def _smtp_answer(error: smtplib.SMTPException) -> tuple[int, str]:
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        code, text = next(iter(error.recipients.values()))
    else:
        code, text = error.smtp_code, error.smtp_error
    text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    return code, f"{code} {text}"


def _describe(error: OSError) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__

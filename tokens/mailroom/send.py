"""Sending a claimed batch over one SMTP connection, recording each token's outcome as it happens."""

from __future__ import annotations

import smtplib
from typing import TYPE_CHECKING

from django.core.mail import get_connection
from django.utils import timezone

from tokens.mailroom.claim import Claim, mark_expired, mark_failed, mark_sent, renew_lease
from tokens.mailroom.render import render_mail
from tokens.models import MailState, Token

if TYPE_CHECKING:
    from tokens.mailroom.drain import DrainResult

# Raised while building or addressing one message, before anything reaches the server: the idna
# codec on a domain label over 63 characters, an address or header holding CR/LF (ValueError, and
# UnicodeError is one), an address the server cannot take without SMTPUTF8.
UNSENDABLE = (ValueError, smtplib.SMTPNotSupportedError)


def send_batch(batch: list[Token], *, claim: Claim, result: DrainResult) -> None:
    smtp = get_connection(fail_silently=False)
    try:
        smtp.open()
    except OSError as error:  # smtplib's errors are OSErrors too: refused, timed out, bad greeting
        result.error = f"SMTP server unreachable: {_describe(error)}"
        for token in batch:
            _failed(token, claim=claim, reason=result.error, permanent=False, result=result)
        return
    held = {token.pk for token in batch}
    try:
        for position, token in enumerate(batch):
            if claim.running_out():
                held = renew_lease(claim, batch[position:])
            if token.pk not in held:  # another run took it over after our lease ran out: it decides
                result.lost_claims += 1
                continue
            now = timezone.now()
            if token.expires_at <= now:
                # Valid when claimed, expired while the batch went out (a slow server, a long batch).
                if mark_expired(token, claim=claim):
                    result.expired += 1
                else:
                    result.lost_claims += 1
                continue
            try:
                smtp.send_messages([render_mail(token, now=now)])
            except UNSENDABLE as error:
                # This message can never be sent (an address stored before the database refused such
                # addresses: accounts/sql/0007_address_rules.sql); the rest of the batch goes on.
                reason = f"cannot be sent to this address: {_describe(error)}"
                _failed(token, claim=claim, reason=reason, permanent=True, result=result)
            except (smtplib.SMTPRecipientsRefused, smtplib.SMTPResponseException) as error:
                code, reason = _smtp_answer(error)
                _failed(token, claim=claim, reason=reason, permanent=500 <= code < 600, result=result)
            except OSError as error:
                # The connection is gone: this token and the rest of the batch wait for their backoff.
                result.error = f"SMTP connection lost: {_describe(error)}"
                for unsent in batch[position:]:
                    _failed(unsent, claim=claim, reason=result.error, permanent=False, result=result)
                return
            else:
                # A run whose lease ran out counts nothing: the run that took the token over decides.
                if mark_sent(token, claim=claim):
                    result.sent += 1
                else:
                    result.lost_claims += 1
                result.last_seq = max(result.last_seq or 0, token.pk)
    finally:
        try:
            smtp.close()
        except OSError:
            pass


def _failed(token: Token, *, claim: Claim, reason: str, permanent: bool, result: DrainResult) -> None:
    state = mark_failed(token, claim=claim, reason=reason, permanent=permanent)
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

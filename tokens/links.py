"""The links in the e-mails: a token's secret as URL-safe text, and the landing page it opens."""

import base64
import binascii

from django.urls import reverse

from tokens.models import Token, TokenAction

LANDING_PAGES = {
    TokenAction.ACTIVATION: "activate-link",
    TokenAction.PASSWORD_RECOVERY: "recover-link",
    TokenAction.RESTORE: "restore-link",
    TokenAction.DELETION: "delete-link",
    TokenAction.EMAIL_CHANGE: "email-change-link",
    TokenAction.EMAIL_CHANGE_UNDO: "email-undo-link",
}


def secret_to_text(secret: bytes) -> str:
    """The URL-safe form of a secret (43 characters, no padding)."""
    return base64.urlsafe_b64encode(bytes(secret)).rstrip(b"=").decode("ascii")


def secret_from_text(text: str) -> bytes | None:
    """The secret a link carries, or None when the text cannot be one."""
    text = text.strip()
    if len(text) != 43:
        return None
    try:
        secret = base64.urlsafe_b64decode(text + "=")
    except (binascii.Error, ValueError):
        return None
    return secret if len(secret) == 32 else None


def landing_path(token: Token) -> str:
    """The path of the page a token's link opens (its action's page, with the secret)."""
    return reverse(LANDING_PAGES[token.action], args=[secret_to_text(token.secret)])

"""Endpoints' signing secrets: made here, shown once, stored only encrypted (docs/events.md,
"Webhooks, per the Standard Webhooks specification").

AES-256-GCM under a key of ``WEBHOOK_SECRET_KEYS`` named by its id, stored beside the ciphertext
(``secret_key_id``), so keys can rotate: the first key encrypts, every listed key decrypts, and
``manage.py reencrypt_webhook_secrets`` moves rows to the first. The associated data is the endpoint's
id: a ciphertext copied onto another endpoint's row does not decrypt there. Unset, the ring is one
key derived from SECRET_KEY (id ``derived``), so that development needs no set-up; ``check --deploy``
warns about it.
"""

import base64
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core import checks

from platform_events.key_rings import key_ring

NONCE_BYTES = 12


class SecretKeyError(Exception):
    """A stored secret that cannot be decrypted; the message never holds a key or a secret."""


def _ring() -> dict[str, bytes]:
    return key_ring(settings.WEBHOOK_SECRET_KEYS, purpose=b"lifecycle webhook secrets")


def current_key_id() -> str:
    return next(iter(_ring()))


def needs_reencryption(key_id: str) -> bool:
    return key_id != current_key_id()


def new_signing_secret() -> str:
    """``whsec_`` and 32 random bytes in base64, the Standard Webhooks form."""
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


def encrypt_secret(secret: str, *, aad: bytes) -> tuple[bytes, str]:
    """(nonce + ciphertext, the key's id) under the current key, bound to ``aad`` (the endpoint's id)."""
    key_id = current_key_id()
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(_ring()[key_id]).encrypt(nonce, secret.encode(), aad), key_id


def decrypt_secret(blob: bytes, key_id: str, *, aad: bytes) -> str:
    key = _ring().get(key_id)
    if key is None:
        raise SecretKeyError(
            f"The secret is encrypted under key {key_id!r}, which WEBHOOK_SECRET_KEYS no longer holds."
        )
    blob = bytes(blob)
    try:
        return AESGCM(key).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], aad).decode()
    except (InvalidTag, ValueError):
        raise SecretKeyError(
            f"The secret does not decrypt under key {key_id!r}: it was changed, or belongs to another endpoint."
        ) from None


@checks.register(checks.Tags.security, deploy=True)
def check_secret_keys(app_configs, **kwargs):
    if settings.WEBHOOK_SECRET_KEYS:
        return []
    return [
        checks.Warning(
            "WEBHOOK_SECRET_KEYS is not set: the webhook endpoints' secrets are encrypted under a key derived from"
            " SECRET_KEY, so rotating SECRET_KEY would make every one unreadable.",
            hint="Set WEBHOOK_SECRET_KEYS=k1:<base64 of 32 random bytes>, then run manage.py reencrypt_webhook_secrets.",
            id="platform_events.W001",
        )
    ]

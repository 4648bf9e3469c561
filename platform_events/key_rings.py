"""Key rings: keys by id, the first one current (it encrypts or digests), every one still accepted,
so that keys rotate. A ring comes from a setting (WEBHOOK_SECRET_KEYS, TOKEN_DIGEST_KEYS, parsed by
lifecycle/configuration.py); unset, it is one key derived from SECRET_KEY for its purpose (id
``derived``), so that development and tests need no set-up, and ``check --deploy`` refuses that."""

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

DERIVED_KEY_ID = "derived"


def key_ring(configured: dict[str, bytes], *, purpose: bytes) -> dict[str, bytes]:
    """``configured``, or one key derived from SECRET_KEY for ``purpose`` (HKDF's info: each purpose
    its own key)."""
    if configured:
        return configured
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(settings.SECRET_KEY.encode())
    return {DERIVED_KEY_ID: derived}

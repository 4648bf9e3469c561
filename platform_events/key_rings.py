"""Key rings: keys by id, the first one current (it encrypts or digests), every one still accepted,
so that keys rotate. A ring comes from a setting (WEBHOOK_SECRET_KEYS, TOKEN_DIGEST_KEYS, parsed by
lifecycle/configuration.py); unset, it is one key derived from SECRET_KEY for its purpose (id
``derived``), so that development and tests need no set-up, and ``check --deploy`` refuses that."""

import functools

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

DERIVED_KEY_ID = "derived"


def key_ring(configured: dict[str, bytes], *, purpose: bytes) -> dict[str, bytes]:
    """``configured``, or one key derived from SECRET_KEY for ``purpose`` (HKDF's info: each purpose
    its own key)."""
    if configured:
        return configured
    return {DERIVED_KEY_ID: _derived(settings.SECRET_KEY, purpose)}


@functools.lru_cache(maxsize=16)
def _derived(secret_key: str, purpose: bytes) -> bytes:
    # Derived once per SECRET_KEY and purpose: a mail run digests each code under it (two derivations
    # an e-mail otherwise).
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(secret_key.encode())

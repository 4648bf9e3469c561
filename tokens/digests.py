"""Digests of a token's credentials, what the database keeps once its e-mail has gone out
(tokens/sql/0015_digests.sql; docs/security.md, "Credentials at rest").

The link's secret is 256 random bits: its digest is sha256(secret), which the database computes itself.
The code has 100,000 values, so its digest is keyed: HMAC-SHA256 under a key of ``TOKEN_DIGEST_KEYS``
that the database never holds, over the token's id and the code (a digest copied onto another token
does not match there). Each digest is stored with its key's id, so keys rotate: the first key
digests, every listed key checks. Unset, the ring is one key derived from SECRET_KEY (id
``derived``), so that development and tests need no set-up; ``check --deploy`` refuses that.
"""

import hashlib
import hmac

from django.conf import settings
from django.core import checks

from platform_events.key_rings import key_ring


def _ring() -> dict[str, bytes]:
    return key_ring(settings.TOKEN_DIGEST_KEYS, purpose=b"lifecycle token code digests")


def current_key_id() -> str:
    return next(iter(_ring()))


def code_digest(token_id: int, code: str, *, key_id: str | None = None) -> bytes | None:
    """HMAC-SHA256 of ``code`` for token ``token_id`` under ``key_id`` (by default the current key); None
    when the ring no longer holds that key (a code digested under a retired key matches nothing)."""
    key = _ring().get(key_id or current_key_id())
    if key is None:
        return None
    return hmac.new(key, f"{int(token_id)}:{code}".encode(), hashlib.sha256).digest()


def secret_digest(secret: bytes) -> bytes:
    """The digest the database keeps of a link's secret (the same as its sha256())."""
    return hashlib.sha256(bytes(secret)).digest()


@checks.register(checks.Tags.security, deploy=True)
def check_digest_keys(app_configs, **kwargs):
    if settings.TOKEN_DIGEST_KEYS:
        return []
    return [
        checks.Error(
            "TOKEN_DIGEST_KEYS is not set: the codes of mailed tokens are digested under a key derived from"
            " SECRET_KEY, so anyone holding SECRET_KEY and a copy of the database can read them back, and"
            " rotating SECRET_KEY would make every mailed code stop working.",
            hint="Set TOKEN_DIGEST_KEYS=k1:<base64 of 32 random bytes> (the first key digests, all listed keys check).",
            id="tokens.E001",
        )
    ]

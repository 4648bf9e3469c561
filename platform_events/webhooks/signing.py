"""Standard Webhooks signatures (the ``standardwebhooks`` package signs; nothing here is hand-made)."""

from datetime import datetime

from standardwebhooks.webhooks import Webhook


def signature_headers(*, msg_id: str, timestamp: datetime, body: bytes | str, secrets: list[str]) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` with one ``v1,<base64>`` per
    secret, space-separated: during a rotation's overlap both the new and the old secret sign."""
    data = body.decode() if isinstance(body, bytes) else body
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": " ".join(Webhook(secret).sign(msg_id, timestamp, data) for secret in secrets),
    }

"""Standard Webhooks signatures (the ``standardwebhooks`` package signs; nothing here is hand-made)."""

from datetime import datetime

from standardwebhooks.webhooks import Webhook


class Signer:
    """An endpoint's secrets, decoded once: a batch signs many deliveries to one endpoint."""

    def __init__(self, secrets: list[str]):
        self._webhooks = [Webhook(secret) for secret in secrets]

    def headers(self, *, msg_id: str, timestamp: datetime, body: str) -> dict[str, str]:
        """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` with one ``v1,<base64>`` per
        secret, space-separated: during a rotation's overlap both the new and the old secret sign."""
        return {
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(timestamp.timestamp())),
            "webhook-signature": " ".join(webhook.sign(msg_id, timestamp, body) for webhook in self._webhooks),
        }


def signature_headers(*, msg_id: str, timestamp: datetime, body: bytes | str, secrets: list[str]) -> dict[str, str]:
    """Signer(secrets).headers(...) for one message."""
    data = body.decode() if isinstance(body, bytes) else body
    return Signer(secrets).headers(msg_id=msg_id, timestamp=timestamp, body=data)

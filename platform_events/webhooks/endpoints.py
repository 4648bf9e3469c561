"""Webhook endpoints: the services staff and commands use (README, "Platform events")."""

from django.utils import timezone

from platform_events.models import WebhookSubscription
from platform_events.webhooks.secrets import decrypt_secret


def endpoint_secrets(endpoint: WebhookSubscription) -> list[str]:
    """The plain secrets to sign with now: the current one, then the previous one while its overlap
    window lasts (Standard Webhooks: one signature each, space-separated)."""
    aad = endpoint.pk.bytes
    secrets = [decrypt_secret(bytes(endpoint.secret_encrypted), endpoint.secret_key_id, aad=aad)]
    if endpoint.previous_secret_until and endpoint.previous_secret_until > timezone.now():
        secrets.append(
            decrypt_secret(bytes(endpoint.previous_secret_encrypted), endpoint.previous_secret_key_id, aad=aad)
        )
    return secrets

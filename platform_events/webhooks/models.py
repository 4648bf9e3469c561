"""Webhook endpoints and their deliveries (platform_events/sql/0010_outbox.sql)."""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Now

from platform_events.outbox.models import EventType, OutboxEvent


class EndpointStatus(models.TextChoices):
    ACTIVE = "ACTIVE", "active"
    PAUSED = "PAUSED", "paused"
    DISABLED_DEAD = "DISABLED_DEAD", "disabled"


class WebhookSubscription(models.Model):
    """A partner's endpoint. Its signing secret is stored encrypted only (platform_events/webhooks/secrets.py);
    change it through platform_events/webhooks/endpoints.py."""

    id = models.UUIDField(primary_key=True)
    owner_id = models.CharField("owner", max_length=64)
    description = models.TextField(blank=True, db_default="")
    url = models.CharField("URL", max_length=2048)
    events = ArrayField(models.TextField(choices=EventType))
    secret_encrypted = models.BinaryField(editable=False)
    secret_key_id = models.CharField(max_length=64, editable=False)
    previous_secret_encrypted = models.BinaryField(null=True, editable=False)
    previous_secret_key_id = models.CharField(max_length=64, null=True, editable=False)
    previous_secret_until = models.DateTimeField(null=True, editable=False)
    status = models.CharField(max_length=32, choices=EndpointStatus, db_default=EndpointStatus.ACTIVE)
    disabled_reason = models.TextField(null=True, blank=True)
    failure_count = models.IntegerField(db_default=0)
    failing_since = models.DateTimeField(null=True)
    last_success_at = models.DateTimeField(null=True)
    last_failure_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    # When the URL took its value (the database sets it): deliveries made before it are not sent again.
    url_since = models.DateTimeField(db_default=Now(), editable=False)

    class Meta:
        managed = False
        db_table = "webhook_subscriptions"
        ordering = ["-created_at"]
        verbose_name = "webhook endpoint"

    def __str__(self):
        return self.url


class DeliveryStatus(models.TextChoices):
    PENDING = "PENDING", "pending"
    DELIVERED = "DELIVERED", "delivered"
    FAILED = "FAILED", "retrying"
    PERMANENTLY_FAILED = "PERMANENTLY_FAILED", "failed"
    # Never sent: its account was erased first (docs/rules.md, "Erasure").
    CANCELLED = "CANCELLED", "cancelled by erasure"


class WebhookDelivery(models.Model):
    """One event due to one endpoint, and its last attempt. Queued by the outbox triggers."""

    id = models.UUIDField(primary_key=True)
    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.DO_NOTHING, related_name="deliveries")
    event = models.ForeignKey(OutboxEvent, on_delete=models.DO_NOTHING, related_name="deliveries")
    event_seq = models.BigIntegerField()
    ordering_key = models.CharField(max_length=140)
    status = models.CharField(max_length=32, choices=DeliveryStatus, db_default=DeliveryStatus.PENDING)
    attempts = models.IntegerField(db_default=0)
    next_retry_at = models.DateTimeField(db_default=Now())
    lease_until = models.DateTimeField(null=True)
    claim = models.UUIDField(null=True)
    http_status = models.IntegerField("HTTP status", null=True)
    http_response_body_excerpt = models.CharField("response", max_length=2048, null=True)
    latency_ms = models.IntegerField("latency (ms)", null=True)
    first_attempt_at = models.DateTimeField(null=True)
    last_attempt_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        managed = False
        db_table = "webhook_deliveries"
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        permissions = [("redeliver_webhookdelivery", "Can send webhook deliveries again")]

    def __str__(self):
        return f"{self.event_id} to {self.subscription_id}"

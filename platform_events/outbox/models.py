"""The outbox (platform_events/sql/0010_outbox.sql): events written only by triggers, never changed, and
the internal consumers' records of the events they handled."""

from django.db import models
from django.db.models.functions import Now


class EventType(models.TextChoices):
    """What the outbox triggers publish (accounts/sql/0013_outbox.sql); a test holds the SQL to these names.
    An endpoint subscribes to some of them."""

    ACCOUNT_CREATED = "account.created", "account.created"
    ACCOUNT_ACTIVATED = "account.activated", "account.activated"
    ACCOUNT_SUSPENDED = "account.suspended", "account.suspended"
    ACCOUNT_UNSUSPENDED = "account.unsuspended", "account.unsuspended"
    ACCOUNT_DEPROVISIONED = "account.deprovisioned", "account.deprovisioned"
    ACCOUNT_REPROVISIONED = "account.reprovisioned", "account.reprovisioned"
    ACCOUNT_ERASED = "account.erased", "account.erased"
    ACCOUNT_DELETED = "account.deleted", "account.deleted"
    ACCOUNT_EMAIL_CHANGED = "account.email_changed", "account.email_changed"
    ACCOUNT_PASSWORD_CHANGED = "account.password_changed", "account.password_changed"


# Sent to one endpoint when staff ask for a test (webhook_send_test()); nobody subscribes to it.
TEST_EVENT_TYPE = "webhook.test"


class OutboxEvent(models.Model):
    """One published fact (platform_events/sql/0010_outbox.sql): written only by triggers, never changed."""

    id = models.UUIDField(primary_key=True)
    seq = models.BigIntegerField(unique=True)
    aggregate_type = models.CharField(max_length=64)
    aggregate_id = models.CharField(max_length=64)
    event_type = models.CharField(max_length=128)
    payload = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "outbox_events"
        ordering = ["-seq"]
        verbose_name = "event"

    def __str__(self):
        return f"{self.event_type} {self.aggregate_type} {self.aggregate_id}"


class ProcessedEvent(models.Model):
    """An internal consumer group's record that it handled an event (platform_events/outbox/consumers.py)."""

    # The key is (consumer_group, event_id); Django is given a composite primary key.
    pk = models.CompositePrimaryKey("consumer_group", "event_id")
    consumer_group = models.CharField(max_length=64)
    event_id = models.UUIDField()
    processed_at = models.DateTimeField(db_default=Now())

    class Meta:
        managed = False
        db_table = "processed_events"

    def __str__(self):
        return f"{self.consumer_group}: {self.event_id}"

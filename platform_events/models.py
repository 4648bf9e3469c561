"""The platform tables: audit events (platform_events/sql/0001_audit.sql, partitioned by month),
rate limits, API clients and their idempotency keys (platform_events/sql/0013_api.sql), and the outbox with its webhook endpoints, deliveries and processed events
(platform_events/sql/0010_outbox.sql).

Audit events and outbox events are written only by database triggers and never changed.
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Now


class ActorType(models.TextChoices):
    USER = "USER"
    SERVICE = "SERVICE"
    SYSTEM = "SYSTEM"


class Result(models.TextChoices):
    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    DENIED = "DENIED"


class AuditAction(models.TextChoices):
    """What the triggers write (accounts/sql/, tokens/sql/); a test holds the SQL to these names. Known
    choices let the admin's filters list them without a SELECT DISTINCT over millions of rows."""

    ACCOUNT_CREATED = "account.created", "account.created"
    ACCOUNT_ACTIVATED = "account.activated", "account.activated"
    ACCOUNT_SUSPENDED = "account.suspended", "account.suspended"
    ACCOUNT_UNSUSPENDED = "account.unsuspended", "account.unsuspended"
    ACCOUNT_CHANGED = "account.changed", "account.changed"
    ACCOUNT_DELETED = "account.deleted", "account.deleted"
    ACCOUNT_HISTORY_REWRITTEN = "account.history_rewritten", "account.history_rewritten"
    ACCOUNT_PASSWORD_SET = "account.password_set", "account.password_set"
    ACCOUNT_PASSWORD_REMOVED = "account.password_removed", "account.password_removed"
    TOKEN_ISSUED = "token.issued", "token.issued"
    TOKEN_CONSUMED = "token.consumed", "token.consumed"
    TOKEN_BURNT = "token.burnt", "token.burnt"
    TOKEN_CODE_REJECTED = "token.code_rejected", "token.code_rejected"
    TOKEN_SUPERSEDED = "token.superseded", "token.superseded"
    TOKEN_MAIL_CHANGED = "token.mail_changed", "token.mail_changed"
    TOKEN_DELETED = "token.deleted", "token.deleted"
    TOKEN_HISTORY_REWRITTEN = "token.history_rewritten", "token.history_rewritten"
    # The trail's own: an export of it (platform_events/sql/0009_audit_export.sql).
    AUDIT_EXPORTED = "audit.exported", "audit.exported"
    # Webhook endpoints and deliveries (platform_events/sql/0010_outbox.sql); never a secret.
    WEBHOOK_CREATED = "webhook.created", "webhook.created"
    WEBHOOK_CHANGED = "webhook.changed", "webhook.changed"
    WEBHOOK_SECRET_ROTATED = "webhook.secret_rotated", "webhook.secret_rotated"
    WEBHOOK_PAUSED = "webhook.paused", "webhook.paused"
    WEBHOOK_RESUMED = "webhook.resumed", "webhook.resumed"
    WEBHOOK_DISABLED = "webhook.disabled", "webhook.disabled"
    WEBHOOK_ENABLED = "webhook.enabled", "webhook.enabled"
    WEBHOOK_DELETED = "webhook.deleted", "webhook.deleted"
    WEBHOOK_TEST_SENT = "webhook.test_sent", "webhook.test_sent"
    WEBHOOK_REDELIVERED = "webhook.redelivered", "webhook.redelivered"
    # API clients (platform_events/sql/0013_api.sql); never a key.
    API_CLIENT_CREATED = "api_client.created", "api_client.created"
    API_CLIENT_CHANGED = "api_client.changed", "api_client.changed"
    API_CLIENT_REVOKED = "api_client.revoked", "api_client.revoked"
    # Node assignment (accounts/sql/0014_nodes.sql): staff's and psql's changes to nodes, and the
    # assignments' changes that are not a client's routine ones.
    NODE_ADDED = "node.added", "node.added"
    NODE_CHANGED = "node.changed", "node.changed"
    NODE_REMOVED = "node.removed", "node.removed"
    NODE_UNASSIGNED = "node.unassigned", "node.unassigned"
    NODE_ASSIGNMENT_CREATED = "node_assignment.created", "node_assignment.created"
    NODE_ASSIGNMENT_CHANGED = "node_assignment.changed", "node_assignment.changed"
    NODE_ASSIGNMENT_DELETED = "node_assignment.deleted", "node_assignment.deleted"


class ResourceType(models.TextChoices):
    ACCOUNT = "account", "account"
    TOKEN = "token", "token"
    AUDIT_TRAIL = "audit_trail", "audit trail"  # an export of the trail; its id is the file's name
    WEBHOOK_ENDPOINT = "webhook_endpoint", "webhook endpoint"
    WEBHOOK_DELIVERY = "webhook_delivery", "webhook delivery"
    API_CLIENT = "api_client", "API client"
    NODE = "node", "node"  # a storage node (its id); an assignment's rows are about its account


class AuditEvent(models.Model):
    # The table's key is (occurred_at, id); Django is told id, unique in practice (random UUIDs).
    id = models.UUIDField(primary_key=True)
    occurred_at = models.DateTimeField()
    actor_type = models.CharField(max_length=16, choices=ActorType)
    actor_id = models.CharField(max_length=64)
    actor_display = models.CharField(max_length=255, null=True, blank=True)
    actor_ip = models.GenericIPAddressField(null=True, blank=True)
    actor_user_agent = models.TextField(null=True, blank=True)
    action = models.CharField(max_length=128, choices=AuditAction)
    resource_type = models.CharField(max_length=64, choices=ResourceType)
    resource_id = models.CharField(max_length=64)
    result = models.CharField(max_length=16, choices=Result)
    reason = models.TextField(null=True, blank=True)
    correlation_id = models.UUIDField(null=True, blank=True)
    request_id = models.UUIDField(null=True, blank=True)
    method = models.CharField(max_length=8, null=True, blank=True)
    path = models.CharField(max_length=2048, null=True, blank=True)
    status_code = models.IntegerField(null=True, blank=True)
    diff_before = models.JSONField(null=True, blank=True)
    diff_after = models.JSONField(null=True, blank=True)
    # The login role that wrote the row (session_user): the actor above is a claim any session can make.
    db_user = models.TextField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "audit_events"
        ordering = ["-occurred_at"]
        permissions = [("export_auditevent", "Can export the audit trail (CSV)")]

    def __str__(self):
        return f"{self.action} {self.resource_type} {self.resource_id} by {self.actor_display or self.actor_id}"


class RateLimit(models.Model):
    """One bucket's hits in one fixed window, counted by platform_events/limits.py (platform_events/sql/0008_limits.sql)."""

    # The table's identity is (bucket, window_start), unique; Django is given the surrogate key.
    id = models.BigAutoField(primary_key=True)
    bucket = models.TextField()  # the limit's name and a keyed digest of the key, never the key itself
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    hits = models.IntegerField()

    class Meta:
        managed = False
        db_table = "rate_limits"

    def __str__(self):
        return f"{self.bucket} from {self.window_start:%Y-%m-%d %H:%M:%S}: {self.hits}"


class EventType(models.TextChoices):
    """What the outbox triggers publish (accounts/sql/0013_outbox.sql); a test holds the SQL to these names.
    An endpoint subscribes to some of them."""

    ACCOUNT_CREATED = "account.created", "account.created"
    ACCOUNT_ACTIVATED = "account.activated", "account.activated"
    ACCOUNT_SUSPENDED = "account.suspended", "account.suspended"
    ACCOUNT_UNSUSPENDED = "account.unsuspended", "account.unsuspended"
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


class ApiScope(models.TextChoices):
    """What an API client may do (platform_events/sql/0013_api.sql lists the same)."""

    ACCOUNTS_READ = "accounts:read", "accounts:read (read and look up accounts)"
    ACCOUNTS_WRITE = "accounts:write", "accounts:write (provision, suspend, unsuspend, send e-mails)"
    SESSIONS = "sessions", "sessions (check a password for sign-in)"


class ApiClient(models.Model):
    """A service that calls the client API with a bearer key. Only the key's SHA-256 is stored
    (platform_events/api/clients.py makes and checks keys); a revoked client stays revoked."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=100, unique=True)
    key_prefix = models.CharField("key starts with", max_length=16, editable=False)
    key_hash = models.BinaryField(editable=False)
    scopes = ArrayField(models.TextField(choices=ApiScope))
    created_at = models.DateTimeField(db_default=Now())
    last_used_at = models.DateTimeField("last used", null=True, editable=False)
    revoked_at = models.DateTimeField(null=True, editable=False)
    revoked_reason = models.TextField(null=True, blank=True, editable=False)

    class Meta:
        managed = False
        db_table = "api_clients"
        ordering = ["name"]
        verbose_name = "API client"

    # A call made with its key is audited as api-client:<id>, actor type SERVICE (platform_events/audit.py).
    audit_kind = "api-client"

    def __str__(self):
        return self.name

    def get_username(self) -> str:
        """The name the audit trail shows for this client when it acts (``actor_display``)."""
        return self.name


class IdempotencyKey(models.Model):
    """A client's Idempotency-Key and the response it was first answered with (platform_events/api/idempotency.py)."""

    # The key is (client_id, key); Django is given a composite primary key.
    pk = models.CompositePrimaryKey("client_id", "key")
    client = models.ForeignKey(ApiClient, on_delete=models.DO_NOTHING, related_name="+")
    key = models.CharField(max_length=128)
    request_hash = models.CharField(max_length=64)
    response_status = models.IntegerField(null=True)
    response_body = models.JSONField(null=True)
    lease_claim = models.UUIDField(null=True)
    lease_until = models.DateTimeField(null=True)
    created_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "idempotency_keys"

    def __str__(self):
        return f"{self.client_id}: {self.key[:8]}…"

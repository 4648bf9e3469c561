"""The audit trail's rows (platform_events/sql/0001_audit.sql, partitioned by month): written only by
database triggers, never changed."""

from django.db import models


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
    ACCOUNT_DEPROVISIONED = "account.deprovisioned", "account.deprovisioned"
    ACCOUNT_REPROVISIONED = "account.reprovisioned", "account.reprovisioned"
    ACCOUNT_ERASED = "account.erased", "account.erased"
    ACCOUNT_CHANGED = "account.changed", "account.changed"
    ACCOUNT_DELETED = "account.deleted", "account.deleted"
    ACCOUNT_HISTORY_REWRITTEN = "account.history_rewritten", "account.history_rewritten"
    ACCOUNT_PASSWORD_SET = "account.password_set", "account.password_set"
    ACCOUNT_PASSWORD_REMOVED = "account.password_removed", "account.password_removed"
    ACCOUNT_SCIM_LINKED = "account.scim_linked", "account.scim_linked"
    ACCOUNT_SCIM_CHANGED = "account.scim_changed", "account.scim_changed"
    ACCOUNT_SCIM_UNLINKED = "account.scim_unlinked", "account.scim_unlinked"
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
    # The outbox's own rules (platform_events/sql/0019_outbox_trail.sql): a delivery changed with the
    # owner's key, a consumer group's registration, a consumer's record of an event, retention's batches.
    WEBHOOK_DELIVERY_REWRITTEN = "webhook.delivery_rewritten", "webhook.delivery_rewritten"
    CONSUMER_REGISTERED = "consumer.registered", "consumer.registered"
    CONSUMER_CHANGED = "consumer.changed", "consumer.changed"
    CONSUMER_REMOVED = "consumer.removed", "consumer.removed"
    EVENT_PROCESSED = "event.processed", "event.processed"
    EVENT_RETENTION_DELETED = "event.retention_deleted", "event.retention_deleted"
    # The Kafka relay's stream (platform_events/sql/0022_event_publications.sql): switched on or off, a
    # period published (again, after a broker lost it), a publication changed with the owner's key.
    EVENT_STREAM_STARTED = "event.stream_started", "event.stream_started"
    EVENT_STREAM_STOPPED = "event.stream_stopped", "event.stream_stopped"
    EVENT_STREAM_TOPICS_MOVED = "event.stream_topics_moved", "event.stream_topics_moved"
    EVENT_PUBLICATION_BACKFILLED = "event.publication_backfilled", "event.publication_backfilled"
    EVENT_PUBLICATION_REWRITTEN = "event.publication_rewritten", "event.publication_rewritten"
    EVENT_PUBLICATION_REPUBLISHED = "event.publication_republished", "event.publication_republished"
    # API clients (platform_events/sql/0013_api.sql); never a key.
    API_CLIENT_CREATED = "api_client.created", "api_client.created"
    API_CLIENT_CHANGED = "api_client.changed", "api_client.changed"
    API_CLIENT_REVOKED = "api_client.revoked", "api_client.revoked"
    # Services, storage nodes and node assignments (accounts/sql/0014_nodes.sql, 0017_node_trail.sql); of a
    # client's routine moves, only its own state changing (keys, generation, retirement, a live row replaced
    # or deleted).
    SERVICE_ADDED = "service.added", "service.added"
    SERVICE_CHANGED = "service.changed", "service.changed"
    SERVICE_REMOVED = "service.removed", "service.removed"
    NODE_ADDED = "node.added", "node.added"
    NODE_CHANGED = "node.changed", "node.changed"
    NODE_REMOVED = "node.removed", "node.removed"
    NODE_UNASSIGNED = "node.unassigned", "node.unassigned"
    NODE_ASSIGNMENT_CREATED = "node_assignment.created", "node_assignment.created"
    NODE_ASSIGNMENT_CHANGED = "node_assignment.changed", "node_assignment.changed"
    NODE_ASSIGNMENT_DELETED = "node_assignment.deleted", "node_assignment.deleted"
    # Staff logins, their groups and permissions (platform_events/sql/0017_staff_trail.sql); never a password hash.
    STAFF_USER_CREATED = "staff_user.created", "staff_user.created"
    STAFF_USER_CHANGED = "staff_user.changed", "staff_user.changed"
    STAFF_USER_PASSWORD_CHANGED = "staff_user.password_changed", "staff_user.password_changed"
    STAFF_USER_PASSWORD_REMOVED = "staff_user.password_removed", "staff_user.password_removed"
    STAFF_USER_DELETED = "staff_user.deleted", "staff_user.deleted"
    STAFF_USER_GROUP_ADDED = "staff_user.group_added", "staff_user.group_added"
    STAFF_USER_GROUP_REMOVED = "staff_user.group_removed", "staff_user.group_removed"
    STAFF_USER_PERMISSION_GRANTED = "staff_user.permission_granted", "staff_user.permission_granted"
    STAFF_USER_PERMISSION_REVOKED = "staff_user.permission_revoked", "staff_user.permission_revoked"
    GROUP_CREATED = "group.created", "group.created"
    GROUP_RENAMED = "group.renamed", "group.renamed"
    GROUP_DELETED = "group.deleted", "group.deleted"
    GROUP_PERMISSION_GRANTED = "group.permission_granted", "group.permission_granted"
    GROUP_PERMISSION_REVOKED = "group.permission_revoked", "group.permission_revoked"
    PERMISSION_RENAMED = "permission.renamed", "permission.renamed"
    CONTENT_TYPE_RENAMED = "content_type.renamed", "content_type.renamed"
    NODE_ASSIGNMENT_KEYS_CHANGED = "node_assignment.keys_changed", "node_assignment.keys_changed"
    NODE_ASSIGNMENT_GENERATION_RAISED = "node_assignment.generation_raised", "node_assignment.generation_raised"
    NODE_ASSIGNMENT_RETIRED = "node_assignment.retired", "node_assignment.retired"
    NODE_ASSIGNMENT_REPLACED = "node_assignment.replaced", "node_assignment.replaced"


class ResourceType(models.TextChoices):
    ACCOUNT = "account", "account"
    TOKEN = "token", "token"
    AUDIT_TRAIL = "audit_trail", "audit trail"  # an export of the trail; its id is the file's name
    WEBHOOK_ENDPOINT = "webhook_endpoint", "webhook endpoint"
    WEBHOOK_DELIVERY = "webhook_delivery", "webhook delivery"
    OUTBOX_CONSUMER = "outbox_consumer", "consumer group"
    OUTBOX_EVENT = "outbox_event", "event"
    OUTBOX = "outbox", "outbox"  # retention's batches of events; its id is "events"
    EVENT_STREAM = "event_stream", "event stream"  # the Kafka relay's switch; its id is "kafka"
    EVENT_PUBLICATION = "event_publication", "event publication"  # its id is the event's
    API_CLIENT = "api_client", "API client"
    NODE = "node", "storage node"
    STAFF_USER = "staff_user", "staff user"
    GROUP = "group", "group"
    PERMISSION = "permission", "permission"
    CONTENT_TYPE = "content_type", "content type"
    SERVICE = "service", "node service"


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

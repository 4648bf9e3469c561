"""The platform tables, for Django's app registry (it loads an app's models from this module). Each
lives with its feature: the audit trail's in platform_events/audit/, the rate limits' in limits/, the
outbox's in outbox/, the webhooks' in webhooks/, the API clients' in api/."""

from platform_events.api.models import ApiClient, ApiScope, IdempotencyKey
from platform_events.audit.models import ActorType, AuditAction, AuditEvent, ResourceType, Result
from platform_events.limits.models import RateLimit
from platform_events.outbox.models import TEST_EVENT_TYPE, EventType, OutboxEvent, ProcessedEvent
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription

__all__ = [
    "ActorType",
    "ApiClient",
    "ApiScope",
    "AuditAction",
    "AuditEvent",
    "DeliveryStatus",
    "EndpointStatus",
    "EventType",
    "IdempotencyKey",
    "OutboxEvent",
    "ProcessedEvent",
    "RateLimit",
    "ResourceType",
    "Result",
    "TEST_EVENT_TYPE",
    "WebhookDelivery",
    "WebhookSubscription",
]

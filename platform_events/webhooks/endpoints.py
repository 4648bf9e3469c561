"""The only way Python code changes a webhook endpoint: add it, change it, rotate its secret, pause,
resume or enable it, send it a test event; and send deliveries again.

The plain signing secret exists only in memory: made (or given) here, encrypted at once with the
endpoint's id as associated data (platform_events/webhooks/secrets.py), and returned to the caller
to show once. The database keeps the ciphertext and its key id.

Each state change is one conditional UPDATE (its WHERE names the state it starts from), so two staff
clicking at once change the endpoint once and the second is told why not. The audit rows (webhook.*)
are written by the triggers (platform_events/sql/0010_outbox.sql), with the acting party each service
is given, and never hold a secret.
"""

import base64
import binascii
import uuid
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Now
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from platform_events.audit.context import audit_context
from platform_events.db.text import is_utf8
from platform_events.outbox.models import EventType
from platform_events.refusals import Refused
from platform_events.webhooks.addresses import check_url
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription
from platform_events.webhooks.secrets import current_key_id, decrypt_secret, encrypt_secret, new_signing_secret

SECRET_PREFIX = "whsec_"
# A given secret's key, decoded: 24 bytes (192 bits) at least, as Svix accepts; 64 (the HMAC-SHA256 block) at most.
SECRET_BYTES_MIN, SECRET_BYTES_MAX = 24, 64
URL_MAX_LENGTH = 2048  # the column's
MAX_OVERLAP_HOURS = 24 * 30
OWNER_MAX_LENGTH = 64  # the column's
DESCRIPTION_MAX_LENGTH = 2000
# reencrypt_secrets() re-encrypts this many endpoints per transaction.
REENCRYPT_BATCH = 100


class EndpointError(Refused):
    """A change of an endpoint refused, in one sentence fit to show (``str(error)``); the fields say it
    to a program: ``field`` names the input refused (url, events, owner, description, secret,
    overlap_hours). An endpoint deleted meanwhile is ``endpoint-gone``; one not in the state the change
    starts from is ``wrong-endpoint-state``, with ``state`` its status; a secret rotated by someone else
    since the endpoint was read is ``secret-changed``."""

    code = "invalid-endpoint"
    status = 422


def _endpoint_gone() -> EndpointError:
    return EndpointError(
        "This endpoint no longer exists.", code="endpoint-gone", status=404, reason="deleted meanwhile"
    )


def endpoint_fields_checked(*, url: str, events: Iterable[str], owner: str, description: str = "") -> dict:
    """The endpoint's columns from what staff or a command gave, or an EndpointError naming the first
    field refused. The admin's forms call it too, so that a refusal shows beside its field."""
    for field, text in (("url", url), ("owner", owner), ("description", description)):
        if not is_utf8(text):  # a command line's undecodable bytes (surrogates) would fail at the database
            raise EndpointError(f"The {field} is not valid text (UTF-8).", field=field)
    if "\x00" in url or url != url.strip() or not url:
        raise EndpointError("The URL must not be empty or hold spaces or control characters.", field="url")
    if len(url) > URL_MAX_LENGTH:
        raise EndpointError(f"The URL must be at most {URL_MAX_LENGTH} characters.", field="url")
    if refusal := check_url(url):
        raise EndpointError(refusal, field="url")
    events = list(events)
    if not events:
        raise EndpointError("Choose at least one event type.", field="events")
    if unknown := [event for event in events if event not in EventType.values]:
        raise EndpointError(
            f"Unknown event type {unknown[0]!r}; known ones: {', '.join(EventType.values)}.", field="events"
        )
    if len(set(events)) != len(events):
        raise EndpointError("Each event type may be named once.", field="events")
    owner = owner.strip()
    if not owner or "\x00" in owner:
        raise EndpointError("Name the endpoint's owner (a partner or a service).", field="owner")
    if len(owner) > OWNER_MAX_LENGTH:
        raise EndpointError(f"The owner must be at most {OWNER_MAX_LENGTH} characters.", field="owner")
    if "\x00" in description or len(description) > DESCRIPTION_MAX_LENGTH:
        raise EndpointError(
            f"The description must be at most {DESCRIPTION_MAX_LENGTH} characters, without NUL.", field="description"
        )
    return {"url": url, "events": events, "owner_id": owner, "description": description}


@sensitive_variables("secret")
def secret_checked(secret: str) -> str:
    """A secret someone chose, if it is ``whsec_`` and the base64 of 24 to 64 bytes; else EndpointError
    (whose sentence never repeats the secret)."""
    if not secret.startswith(SECRET_PREFIX):
        raise EndpointError(f"A secret must start with {SECRET_PREFIX}.", field="secret")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise EndpointError(f"A secret must be {SECRET_PREFIX} followed by base64.", field="secret") from None
    if not SECRET_BYTES_MIN <= len(key) <= SECRET_BYTES_MAX:
        raise EndpointError(
            f"A secret must hold {SECRET_BYTES_MIN} to {SECRET_BYTES_MAX} bytes (it holds {len(key)}).",
            field="secret",
        )
    return secret


@sensitive_variables("secret")
def endpoint_create(
    *, url: str, events: list[str], owner: str, actor, description: str = "", secret: str | None = None
) -> tuple[WebhookSubscription, str]:
    """A new active endpoint, and its plain secret (the given one, or a new one) to show once.
    Nothing is written when an input is refused (EndpointError)."""
    columns = endpoint_fields_checked(url=url, events=events, owner=owner, description=description)
    secret = secret_checked(secret) if secret is not None else new_signing_secret()
    # The id before the insert: it is the ciphertext's associated data, so that a secret copied to
    # another row does not decrypt there.
    endpoint_id = uuid.uuid4()
    blob, key_id = encrypt_secret(secret, aad=endpoint_id.bytes)
    with transaction.atomic(), audit_context(actor=actor):
        WebhookSubscription.objects.create(id=endpoint_id, secret_encrypted=blob, secret_key_id=key_id, **columns)
    return WebhookSubscription.objects.get(pk=endpoint_id), secret


def endpoint_change(endpoint: WebhookSubscription, *, url: str, events: list[str], owner: str, description: str, actor):
    """Change what staff may change (URL, events, owner, description), never the secret or the state:
    only those columns are written, so a rotation at the same moment is kept."""
    columns = endpoint_fields_checked(url=url, events=events, owner=owner, description=description)
    with transaction.atomic(), audit_context(actor=actor):
        changed = WebhookSubscription.objects.filter(pk=endpoint.pk).update(**columns)
    if not changed:
        raise _endpoint_gone()
    endpoint.refresh_from_db()
    return endpoint


@sensitive_variables("secret")
def endpoint_rotate_secret(endpoint: WebhookSubscription, *, actor, overlap_hours: int | None = None) -> str:
    """A new secret for the endpoint, returned to show once. The one it replaces stays valid (both
    signatures are sent) for ``overlap_hours`` (WEBHOOKS_SECRET_OVERLAP_HOURS); a rotation within
    that window drops the older previous secret. Refused if the secret changed since ``endpoint``
    was read (someone rotated it at the same moment: the secret they were shown must stay)."""
    hours = settings.WEBHOOKS_SECRET_OVERLAP_HOURS if overlap_hours is None else overlap_hours
    if not 0 <= hours <= MAX_OVERLAP_HOURS:  # 2**31 hours would be a database error, not a sentence
        raise EndpointError(
            f"The overlap must be from 0 to {MAX_OVERLAP_HOURS} hours (30 days).", field="overlap_hours"
        )
    secret = new_signing_secret()
    blob, key_id = encrypt_secret(secret, aad=endpoint.pk.bytes)
    with transaction.atomic(), audit_context(actor=actor), connection.cursor() as cursor:
        cursor.execute(
            """UPDATE webhook_subscriptions
               SET previous_secret_encrypted = secret_encrypted, previous_secret_key_id = secret_key_id,
                   previous_secret_until = now() + make_interval(hours => %s),
                   secret_encrypted = %s, secret_key_id = %s
               WHERE id = %s AND secret_encrypted = %s AND secret_key_id = %s""",
            [hours, blob, key_id, endpoint.pk, bytes(endpoint.secret_encrypted), endpoint.secret_key_id],
        )
        rotated = cursor.rowcount
    if not rotated:
        raise EndpointError(
            "The secret was changed by someone else a moment ago; reload the page and try again.",
            code="secret-changed",
            status=409,
        )
    endpoint.refresh_from_db()
    return secret


def endpoint_pause(endpoint: WebhookSubscription, *, actor) -> WebhookSubscription:
    """Stop sending to an active endpoint; its events keep being queued, and are sent once it resumes."""
    return _move(endpoint, EndpointStatus.ACTIVE, EndpointStatus.PAUSED, actor=actor)


def endpoint_resume(endpoint: WebhookSubscription, *, actor) -> WebhookSubscription:
    """Send again to a paused endpoint, starting with what was queued while it was paused."""
    return _move(endpoint, EndpointStatus.PAUSED, EndpointStatus.ACTIVE, actor=actor)


def endpoint_enable(endpoint: WebhookSubscription, *, actor) -> WebhookSubscription:
    """Take back an endpoint the dispatcher disabled (410 Gone, or failing for days); the trigger
    clears its failures. Events published while it was disabled were not queued for it."""
    return _move(endpoint, EndpointStatus.DISABLED_DEAD, EndpointStatus.ACTIVE, actor=actor)


def endpoint_send_test(endpoint: WebhookSubscription, *, actor) -> uuid.UUID:
    """Queue a webhook.test event for this endpoint alone (webhook_send_test()); returns the event's id.
    A paused endpoint receives it when resumed."""
    try:
        with transaction.atomic(), audit_context(actor=actor), connection.cursor() as cursor:
            cursor.execute("SELECT webhook_send_test(%s)", [endpoint.pk])
            (event_id,) = cursor.fetchone()
    except DatabaseError as error:
        if getattr(error.__cause__, "sqlstate", None) == "LP004":  # no such endpoint (deleted meanwhile)
            raise _endpoint_gone() from None
        raise
    return event_id


def made_for_former_url(delivery: WebhookDelivery) -> bool:
    """Whether the delivery was made before its endpoint's URL last changed: its payload was meant for
    another receiver, and the database refuses to send it again (platform_events/sql/0021_endpoint_url_since.sql)."""
    return delivery.created_at < delivery.subscription.url_since


def deliveries_redeliver(deliveries: QuerySet | Iterable, *, actor) -> int:
    """Send deliveries again (a queryset of them, or their ids): each one not already waiting goes back
    to PENDING, due now, in one statement; the trigger audits each (webhook.redelivered) and wakes the
    dispatcher. Returns how many were sent again. One under a live lease is being sent right now and is
    left alone: clearing its lease would let a second dispatcher send it at the same time. One made
    before its endpoint's URL last changed is left alone too: its history is not the new URL's. One
    cancelled by its account's erasure is never sent (the database refuses it too)."""
    ids = deliveries.values("pk") if isinstance(deliveries, QuerySet) else list(deliveries)
    with transaction.atomic(), audit_context(actor=actor):
        return (
            WebhookDelivery.objects.filter(pk__in=ids)
            .exclude(status__in=[DeliveryStatus.PENDING, DeliveryStatus.CANCELLED])
            .exclude(created_at__lt=F("subscription__url_since"))
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=Now()))
            .update(status=DeliveryStatus.PENDING, next_retry_at=Now(), lease_until=None, claim=None)
        )


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


def reencrypt_secrets(*, batch_size: int = REENCRYPT_BATCH, progress: Callable[[int], None] | None = None) -> int:
    """Re-encrypt under the current key (WEBHOOK_SECRET_KEYS) every secret, current or previous, held
    under another; a batch per transaction, each row locked while it is rewritten. Returns how many
    endpoints were rewritten; ``progress`` is told the running count after each batch. Not audited:
    nothing staff see changes (the trigger leaves it out)."""
    key_id, done, after = current_key_id(), 0, None
    stale = ~Q(secret_key_id=key_id) | (Q(previous_secret_key_id__isnull=False) & ~Q(previous_secret_key_id=key_id))
    while True:
        with transaction.atomic():
            batch = WebhookSubscription.objects.filter(stale).order_by("pk")
            if after is not None:  # walk by id: a row that cannot be rewritten is not read again
                batch = batch.filter(pk__gt=after)
            rows = list(batch.select_for_update(no_key=True)[:batch_size])
            for endpoint in rows:
                _reencrypt(endpoint, key_id)
        if not rows:
            return done
        done, after = done + len(rows), rows[-1].pk
        if progress:
            progress(done)


@sensitive_variables("secret", "previous")
def _reencrypt(endpoint: WebhookSubscription, key_id: str) -> None:
    aad = endpoint.pk.bytes
    columns = {}
    if endpoint.secret_key_id != key_id:
        secret = decrypt_secret(bytes(endpoint.secret_encrypted), endpoint.secret_key_id, aad=aad)
        columns["secret_encrypted"], columns["secret_key_id"] = encrypt_secret(secret, aad=aad)
    if endpoint.previous_secret_key_id not in (None, key_id):
        previous = decrypt_secret(bytes(endpoint.previous_secret_encrypted), endpoint.previous_secret_key_id, aad=aad)
        columns["previous_secret_encrypted"], columns["previous_secret_key_id"] = encrypt_secret(previous, aad=aad)
    WebhookSubscription.objects.filter(pk=endpoint.pk).update(**columns)


def _move(endpoint: WebhookSubscription, source: str, target: str, *, actor) -> WebhookSubscription:
    """From ``source`` to ``target`` in one conditional UPDATE; an EndpointError (with the state it is
    in) when the endpoint is not in ``source``, e.g. another staff member moved it a moment ago."""
    with transaction.atomic(), audit_context(actor=actor):
        moved = WebhookSubscription.objects.filter(pk=endpoint.pk, status=source).update(status=target)
        if moved and target == EndpointStatus.ACTIVE:
            with connection.cursor() as cursor:  # what waited while it was paused is due now
                cursor.execute("SELECT pg_notify('webhook_delivery', '')")
    if not moved:
        state = WebhookSubscription.objects.filter(pk=endpoint.pk).values_list("status", flat=True).first()
        if state is None:
            raise _endpoint_gone()
        now = EndpointStatus(state)
        raise EndpointError(
            f"This endpoint is {now.label}, not {EndpointStatus(source).label}.",
            code="wrong-endpoint-state",
            status=409,
            state=now,
            reason=f"{now.label}, not {EndpointStatus(source).label}",
        )
    endpoint.refresh_from_db()
    return endpoint

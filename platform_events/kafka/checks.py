"""The checks of the Kafka relay's configuration against the database's switch (docs/kafka.md)."""

from django.conf import settings
from django.core import checks
from django.db import DatabaseError, connections

# Counted up to this many: the warning needs an order of size, not a scan of a million rows.
COUNT_UP_TO = 100_000


@checks.register(checks.Tags.database)
def check_stream_has_a_broker(app_configs, databases=None, **kwargs):
    """Publication switched on in the database while this configuration names no broker: every new
    event waits for a relay that will not come, and the outbox keeps it."""
    if settings.KAFKA_BOOTSTRAP_SERVERS or not databases:
        return []
    alias = "default" if "default" in databases else sorted(databases)[0]  # migrate checks the owner's
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT to_regclass('event_stream') IS NOT NULL AND EXISTS (SELECT FROM event_stream)")
            if not cursor.fetchone()[0]:
                return []
            cursor.execute(
                "SELECT count(*) FROM (SELECT FROM event_publications WHERE status = 'PENDING' LIMIT %s) waiting",
                [COUNT_UP_TO],
            )
            (waiting,) = cursor.fetchone()
    except DatabaseError:  # not migrated yet, or unreachable: other checks and commands say so
        return []
    count = f"{waiting:,}" if waiting < COUNT_UP_TO else f"over {COUNT_UP_TO:,}"
    return [
        checks.Warning(
            f"Publication to Kafka is on in the database but KAFKA_BOOTSTRAP_SERVERS is unset here: {count} events"
            " wait for a relay, and the outbox keeps them until they are published.",
            hint="Set KAFKA_BOOTSTRAP_SERVERS and run manage.py publish_events, or switch publication off for good"
            " with manage.py publish_events --off.",
            id="platform_events.W002",
        )
    ]


@checks.register(checks.Tags.security, deploy=True)
def check_sasl_password_is_encrypted(app_configs, **kwargs):
    security = settings.KAFKA_SECURITY
    if not settings.KAFKA_BOOTSTRAP_SERVERS or security.get("security.protocol") != "sasl_plaintext":
        return []
    if security.get("sasl.mechanism") != "PLAIN":
        return []
    return [
        checks.Warning(
            "KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT with KAFKA_SASL_MECHANISM=PLAIN sends the relay's Kafka password"
            " over the network unencrypted.",
            hint="Use SASL_SSL, or a SCRAM mechanism at the least.",
            id="platform_events.W003",
        )
    ]

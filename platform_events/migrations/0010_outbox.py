import django.contrib.postgres.fields
import django.db.models.functions.datetime
from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("platform_events", "0009_audit_export")]

    operations = [
        run_sql_file(__file__, "0010_outbox"),
        migrations.CreateModel(
            name="OutboxEvent",
            fields=[
                ("id", models.UUIDField(primary_key=True, serialize=False)),
                ("seq", models.BigIntegerField(unique=True)),
                ("aggregate_type", models.CharField(max_length=64)),
                ("aggregate_id", models.CharField(max_length=64)),
                ("event_type", models.CharField(max_length=128)),
                ("payload", models.JSONField()),
                ("created_at", models.DateTimeField()),
            ],
            options={
                "verbose_name": "event",
                "db_table": "outbox_events",
                "ordering": ["-seq"],
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="ProcessedEvent",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "consumer_group", "event_id", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("consumer_group", models.CharField(max_length=64)),
                ("event_id", models.UUIDField()),
                ("processed_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                "db_table": "processed_events",
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="WebhookDelivery",
            fields=[
                ("id", models.UUIDField(primary_key=True, serialize=False)),
                ("event_seq", models.BigIntegerField()),
                ("ordering_key", models.CharField(max_length=140)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("PENDING", "pending"),
                            ("DELIVERED", "delivered"),
                            ("FAILED", "retrying"),
                            ("PERMANENTLY_FAILED", "failed"),
                        ],
                        db_default="PENDING",
                        max_length=32,
                    ),
                ),
                ("attempts", models.IntegerField(db_default=0)),
                ("next_retry_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("lease_until", models.DateTimeField(null=True)),
                ("claim", models.UUIDField(null=True)),
                ("http_status", models.IntegerField(null=True, verbose_name="HTTP status")),
                ("http_response_body_excerpt", models.CharField(max_length=2048, null=True, verbose_name="response")),
                ("latency_ms", models.IntegerField(null=True, verbose_name="latency (ms)")),
                ("first_attempt_at", models.DateTimeField(null=True)),
                ("last_attempt_at", models.DateTimeField(null=True)),
                ("created_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                "verbose_name_plural": "webhook deliveries",
                "db_table": "webhook_deliveries",
                "ordering": ["-created_at"],
                "permissions": [("redeliver_webhookdelivery", "Can send webhook deliveries again")],
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="WebhookSubscription",
            fields=[
                ("id", models.UUIDField(primary_key=True, serialize=False)),
                ("owner_id", models.CharField(max_length=64, verbose_name="owner")),
                ("description", models.TextField(blank=True, db_default="")),
                ("url", models.CharField(max_length=2048, verbose_name="URL")),
                (
                    "events",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.TextField(
                            choices=[
                                ("account.created", "account.created"),
                                ("account.activated", "account.activated"),
                                ("account.suspended", "account.suspended"),
                                ("account.unsuspended", "account.unsuspended"),
                                ("account.deleted", "account.deleted"),
                                ("account.email_changed", "account.email_changed"),
                                ("account.password_changed", "account.password_changed"),
                            ]
                        ),
                        size=None,
                    ),
                ),
                ("secret_encrypted", models.BinaryField()),
                ("secret_key_id", models.CharField(editable=False, max_length=64)),
                ("previous_secret_encrypted", models.BinaryField(null=True)),
                ("previous_secret_key_id", models.CharField(editable=False, max_length=64, null=True)),
                ("previous_secret_until", models.DateTimeField(editable=False, null=True)),
                (
                    "status",
                    models.CharField(
                        choices=[("ACTIVE", "active"), ("PAUSED", "paused"), ("DISABLED_DEAD", "disabled")],
                        db_default="ACTIVE",
                        max_length=32,
                    ),
                ),
                ("disabled_reason", models.TextField(blank=True, null=True)),
                ("failure_count", models.IntegerField(db_default=0)),
                ("failing_since", models.DateTimeField(null=True)),
                ("last_success_at", models.DateTimeField(null=True)),
                ("last_failure_at", models.DateTimeField(null=True)),
                ("created_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("updated_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                "verbose_name": "webhook endpoint",
                "db_table": "webhook_subscriptions",
                "ordering": ["-created_at"],
                "managed": False,
            },
        ),
    ]

from django.db import migrations

SCHEDULE_NAME = "webhooks: deliver"


def add_schedule(apps, schema_editor):
    # The worker (manage.py qcluster) delivers every minute: retries that came due, and a fallback beside
    # listen_webhooks.
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).update_or_create(
        name=SCHEDULE_NAME,
        defaults={"func": "platform_events.tasks.deliver_webhooks", "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(name=SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("platform_events", "0010_outbox"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]

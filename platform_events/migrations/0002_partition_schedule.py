from django.db import migrations

SCHEDULE_NAME = "audit: ensure partitions"


def add_schedule(apps, schema_editor):
    # The worker makes next months' audit partitions daily (no pg_partman).
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).update_or_create(
        name=SCHEDULE_NAME,
        defaults={"func": "platform_events.tasks.ensure_audit_partitions", "schedule_type": "D", "repeats": -1},
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(name=SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("platform_events", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]

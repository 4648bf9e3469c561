from django.db import migrations

SCHEDULE_NAME = "mailroom: drain"


def add_schedule(apps, schema_editor):
    # The worker (manage.py qcluster) drains every minute, a fallback beside listen_mailroom.
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).update_or_create(
        name=SCHEDULE_NAME,
        defaults={"func": "tokens.tasks.drain_mailroom", "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(name=SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("tokens", "0002_mailroom"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]

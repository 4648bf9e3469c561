from django.db import migrations

SCHEDULE_NAME = "node assignments: account events"


def add_schedule(apps, schema_editor):
    # Every minute, as manage.py process_account_events (accounts/nodes/consumer.py).
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).update_or_create(
        name=SCHEDULE_NAME,
        defaults={
            "func": "accounts.nodes.consumer.process_account_events",
            "schedule_type": "I",
            "minutes": 1,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(name=SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [("lifecycle", "0001_cleanup_schedule"), ("accounts", "0014_nodes")]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]

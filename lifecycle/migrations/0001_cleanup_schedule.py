from django.db import migrations

SCHEDULE_NAME = "cleanup: retention rules"


def add_schedule(apps, schema_editor):
    # Daily, as manage.py cleanup (lifecycle/ops/retention.py).
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).update_or_create(
        name=SCHEDULE_NAME, defaults={"func": "lifecycle.tasks.cleanup", "schedule_type": "D", "repeats": -1}
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(name=SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more")]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]

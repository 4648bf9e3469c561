from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("tokens", "0003_mailroom_schedule"),
        ("platform_events", "0001_initial"),
    ]

    operations = [run_sql_file(__file__, "0004_audit")]

from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("platform_events", "0004_runtime_role"),
    ]

    operations = [run_sql_file(__file__, "0005_history_rules")]

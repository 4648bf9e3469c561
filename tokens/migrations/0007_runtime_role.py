from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("tokens", "0006_code_attempts"),
        ("platform_events", "0004_runtime_role"),
    ]

    operations = [run_sql_file(__file__, "0007_runtime_role")]

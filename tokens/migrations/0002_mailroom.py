from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("tokens", "0001_initial"),
    ]

    operations = [
        # Unmanaged models: Django tracks no field changes, the SQL file is the whole change.
        run_sql_file(__file__, "0002_mailroom"),
    ]

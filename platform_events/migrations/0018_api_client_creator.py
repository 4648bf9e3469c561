from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("platform_events", "0017_staff_trail"),
    ]

    operations = [
        run_sql_file(__file__, "0018_api_client_creator"),
    ]

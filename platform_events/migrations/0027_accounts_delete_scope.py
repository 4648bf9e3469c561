from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("platform_events", "0026_event_publications_parked"),
    ]

    operations = [
        run_sql_file(__file__, "0027_accounts_delete_scope"),
    ]

from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0012_substring_search"), ("platform_events", "0010_outbox")]

    operations = [run_sql_file(__file__, "0013_outbox")]

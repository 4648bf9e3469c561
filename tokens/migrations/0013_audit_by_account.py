from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0012_code_only_burnt"), ("platform_events", "0008_limits")]

    operations = [run_sql_file(__file__, "0013_audit_by_account")]

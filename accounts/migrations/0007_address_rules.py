from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0006_audit_rows")]

    operations = [run_sql_file(__file__, "0007_address_rules")]

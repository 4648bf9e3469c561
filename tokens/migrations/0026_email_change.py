from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0025_email_change_actions"), ("accounts", "0025_account_sessions")]

    operations = [run_sql_file(__file__, "0026_email_change")]

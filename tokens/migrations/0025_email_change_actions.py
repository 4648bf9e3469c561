from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0024_deletion_by_password")]

    operations = [run_sql_file(__file__, "0025_email_change_actions")]

from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0014_retry_mail_and_mail_runs")]

    operations = [run_sql_file(__file__, "0015_digests")]

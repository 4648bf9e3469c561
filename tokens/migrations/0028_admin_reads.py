from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0027_vouched_activation")]

    operations = [run_sql_file(__file__, "0028_admin_reads")]

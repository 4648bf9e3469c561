from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("platform_events", "0030_admin_reads")]

    operations = [run_sql_file(__file__, "0031_deliveries_fillfactor")]

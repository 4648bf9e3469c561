from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("platform_events", "0029_scim_scope")]

    operations = [run_sql_file(__file__, "0030_admin_reads")]

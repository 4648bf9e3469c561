from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0019_node_trail_gaps")]

    operations = [run_sql_file(__file__, "0020_deprovisioned_state")]

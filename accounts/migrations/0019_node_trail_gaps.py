from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0018_node_bounds")]

    operations = [run_sql_file(__file__, "0019_node_trail_gaps")]

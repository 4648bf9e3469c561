from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0022_node_unretire")]

    operations = [run_sql_file(__file__, "0023_erased_state")]

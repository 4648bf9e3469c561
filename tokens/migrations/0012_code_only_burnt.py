from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0011_used_while_mailing")]

    operations = [run_sql_file(__file__, "0012_code_only_burnt")]

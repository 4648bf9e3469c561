from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0026_scim_users")]

    operations = [run_sql_file(__file__, "0027_delivery_record_erased_lookup")]

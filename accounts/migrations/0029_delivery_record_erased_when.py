from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0028_daily_counts")]

    operations = [run_sql_file(__file__, "0029_delivery_record_erased_when")]

import django.db.models.functions.datetime
from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0027_delivery_record_erased_lookup")]

    operations = [
        run_sql_file(__file__, "0028_daily_counts"),
        migrations.CreateModel(
            name="AccountDailyCount",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("zone", models.TextField()),
                ("day", models.DateField()),
                ("signups", models.IntegerField()),
                ("activations", models.IntegerField()),
                ("counted_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={"db_table": "account_daily_counts", "managed": False},
        ),
    ]

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0010_hardening")]

    operations = [
        run_sql_file(__file__, "0011_passwords"),
        migrations.CreateModel(
            name="AccountPassword",
            fields=[
                ("account", models.OneToOneField(db_column="account", on_delete=django.db.models.deletion.DO_NOTHING, primary_key=True, related_name="password", serialize=False, to="accounts.account")),
                ("password", models.CharField(max_length=128)),
                ("changed_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={"db_table": "account_passwords", "managed": False},
        ),
    ]

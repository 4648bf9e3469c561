import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0024_erasure")]

    operations = [
        run_sql_file(__file__, "0025_account_sessions"),
        migrations.CreateModel(
            name="AccountSession",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("account", models.ForeignKey(db_column="account", on_delete=django.db.models.deletion.DO_NOTHING, related_name="sessions", to="accounts.account")),
                ("secret_digest", models.BinaryField(max_length=32)),
                ("password_changed_at", models.DateTimeField()),
                ("signed_in_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("expires_at", models.DateTimeField()),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                ("ended_by", models.CharField(blank=True, choices=[("sign-out", "signed out"), ("password", "password changed"), ("suspended", "account suspended"), ("deprovisioned", "account deprovisioned"), ("address", "address change undone")], max_length=16, null=True)),
                ("client_address", models.GenericIPAddressField(blank=True, null=True)),
                ("user_agent", models.CharField(blank=True, default="", max_length=256)),
            ],
            options={"db_table": "account_sessions", "ordering": ["-signed_in_at", "-id"], "managed": False},
        ),
    ]

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0025_account_sessions"),
        ("platform_events", "0029_scim_scope"),
        ("tokens", "0026_email_change"),
    ]

    operations = [
        run_sql_file(__file__, "0026_scim_users"),
        migrations.CreateModel(
            name="ScimUser",
            fields=[
                (
                    "account",
                    models.OneToOneField(
                        db_column="account",
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="scim_user",
                        serialize=False,
                        to="accounts.account",
                    ),
                ),
                (
                    "client",
                    models.ForeignKey(
                        db_column="client",
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="scim_users",
                        to="platform_events.apiclient",
                    ),
                ),
                ("user_name", models.CharField(max_length=254)),
                ("external_id", models.CharField(blank=True, max_length=254, null=True)),
                ("deleted_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("updated_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={"db_table": "scim_users", "managed": False},
        ),
    ]

from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0013_audit_by_account")]

    operations = [
        run_sql_file(__file__, "0014_dead_mail"),
        migrations.AlterModelOptions(
            name="job",
            options={"managed": False, "ordering": ["-id"], "verbose_name": "mail run", "verbose_name_plural": "mail runs"},
        ),
        migrations.AlterModelOptions(
            name="token",
            options={
                "managed": False,
                "ordering": ["-id"],
                "permissions": [("retry_mail", "Can retry mailing tokens now")],
            },
        ),
    ]

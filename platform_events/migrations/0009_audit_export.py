from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("platform_events", "0008_limits")]

    operations = [
        run_sql_file(__file__, "0009_audit_export"),
        migrations.AlterModelOptions(
            name="auditevent",
            options={
                "managed": False,
                "ordering": ["-occurred_at"],
                "permissions": [("export_auditevent", "Can export the audit trail (CSV)")],
            },
        ),
    ]

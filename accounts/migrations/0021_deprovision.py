from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("accounts", "0020_deprovisioned_state")]

    operations = [
        run_sql_file(__file__, "0021_deprovision"),
        migrations.AlterModelOptions(
            name="account",
            options={
                "managed": False,
                "ordering": ["-id"],
                "permissions": [
                    ("suspend_account", "Can suspend and unsuspend accounts"),
                    ("resend_activation", "Can resend activation e-mails"),
                    ("send_password_recovery", "Can send password-recovery e-mails"),
                    ("deprovision_account", "Can deprovision accounts"),
                    ("reprovision_account", "Can reprovision deprovisioned accounts"),
                ],
            },
        ),
    ]

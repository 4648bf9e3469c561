from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0023_erased_state"),
        ("platform_events", "0028_erasure"),
        ("tokens", "0019_deprovisioned"),
    ]

    operations = [
        run_sql_file(__file__, "0024_erasure"),
        migrations.AlterField(model_name="account", name="email", field=models.CharField(max_length=254, null=True)),
        migrations.AlterField(model_name="account", name="login", field=models.CharField(max_length=254, null=True)),
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
                    ("erase_account", "Can erase deprovisioned accounts"),
                ],
            },
        ),
    ]

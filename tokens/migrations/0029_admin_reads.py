from django.db import migrations

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("tokens", "0028_due_mail_order")]

    operations = [run_sql_file(__file__, "0029_admin_reads")]

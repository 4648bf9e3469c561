from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("platform_events", "0007_partition_upkeep")]

    operations = [
        # The schema comes from the SQL file; the model below only records Django's view of it.
        run_sql_file(__file__, "0008_limits"),
        migrations.CreateModel(
            name="RateLimit",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("bucket", models.TextField()),
                ("window_start", models.DateTimeField()),
                ("window_end", models.DateTimeField()),
                ("hits", models.IntegerField()),
            ],
            options={
                "db_table": "rate_limits",
                "managed": False,
            },
        ),
    ]

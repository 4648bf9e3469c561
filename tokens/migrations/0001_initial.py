import django.db.models.functions.datetime
from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        # The schema comes from the SQL file; the models below only record Django's view of it.
        run_sql_file(__file__, "0001_tokens"),
        migrations.CreateModel(
            name='Job',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('job_type', models.CharField(choices=[('mailroom', 'Mailroom')], max_length=16)),
                ('last_seq', models.BigIntegerField(blank=True, null=True)),
                ('started_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('claimed', models.IntegerField(db_default=0)),
                ('sent', models.IntegerField(db_default=0)),
                ('failed', models.IntegerField(db_default=0)),
                ('error', models.TextField(blank=True, null=True)),
            ],
            options={
                'db_table': 'jobs',
                'ordering': ['-id'],
                'managed': False,
            },
        ),
        migrations.CreateModel(
            name='Token',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('action', models.CharField(choices=[('activation', 'Activation'), ('password_recovery', 'Password Recovery')], max_length=17)),
                ('secret', models.BinaryField(editable=False)),
                ('code', models.CharField(db_default=models.Func(function='lifecycle_random_code'), editable=False, max_length=5)),
                ('expires_at', models.DateTimeField()),
                ('consumed_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('failed_attempts', models.SmallIntegerField(db_default=0)),
                ('superseded_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'db_table': 'tokens',
                'ordering': ['-id'],
                'managed': False,
            },
        ),
    ]

import django.db.models.functions.datetime
from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        # The schema comes from the SQL file; the models below only record Django's view of it.
        run_sql_file(__file__, "0001_accounts"),
        migrations.CreateModel(
            name='Account',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('email', models.CharField(max_length=254)),
                ('status', models.CharField(choices=[('provisioned', 'Provisioned'), ('active', 'Active'), ('suspended', 'Suspended')], db_default='provisioned', max_length=11)),
                ('login', models.CharField(max_length=254)),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('status_changed_at', models.DateTimeField(blank=True, null=True)),
                ('activated_at', models.DateTimeField(blank=True, null=True)),
                ('suspended_at', models.DateTimeField(blank=True, null=True)),
                ('unsuspended_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'db_table': 'accounts',
                'ordering': ['-id'],
                'managed': False,
            },
        ),
    ]

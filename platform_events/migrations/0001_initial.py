from django.db import migrations, models

from platform_events.db.sql_files import run_sql_file


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        # The schema comes from the SQL file; the model below only records Django's view of it.
        run_sql_file(__file__, "0001_audit"),
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.UUIDField(primary_key=True, serialize=False)),
                ('occurred_at', models.DateTimeField()),
                ('actor_type', models.CharField(max_length=16)),
                ('actor_id', models.CharField(max_length=64)),
                ('actor_display', models.CharField(blank=True, max_length=255, null=True)),
                ('actor_ip', models.GenericIPAddressField(blank=True, null=True)),
                ('actor_user_agent', models.TextField(blank=True, null=True)),
                ('action', models.CharField(max_length=128)),
                ('resource_type', models.CharField(max_length=64)),
                ('resource_id', models.CharField(max_length=64)),
                ('result', models.CharField(max_length=16)),
                ('reason', models.TextField(blank=True, null=True)),
                ('correlation_id', models.UUIDField(blank=True, null=True)),
                ('request_id', models.UUIDField(blank=True, null=True)),
                ('method', models.CharField(blank=True, max_length=8, null=True)),
                ('path', models.CharField(blank=True, max_length=2048, null=True)),
                ('status_code', models.IntegerField(blank=True, null=True)),
                ('diff_before', models.JSONField(blank=True, null=True)),
                ('diff_after', models.JSONField(blank=True, null=True)),
            ],
            options={
                'db_table': 'audit_events',
                'ordering': ['-occurred_at'],
                'managed': False,
            },
        ),
    ]

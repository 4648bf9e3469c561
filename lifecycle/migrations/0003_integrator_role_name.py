# The Integrator role's group is named as the role, like Support's and Auditor's (lifecycle/backoffice/roles.py):
# the group keeps its members; ensure_roles, after this migrate, gives it its permissions as before.
from django.db import migrations

OLD, NEW = "Integrators", "Integrator"


def rename(apps, schema_editor, *, old=OLD, new=NEW):
    groups = apps.get_model("auth", "Group").objects.using(schema_editor.connection.alias)
    group = groups.filter(name=old).first()
    if group is None:  # a database made after the rename, or before the roles were
        return
    if existing := groups.filter(name=new).first():  # made by hand meanwhile: one group, with both's members
        existing.user_set.add(*group.user_set.all())
        group.delete()
        return
    group.name = new
    group.save(update_fields=["name"])


def rename_back(apps, schema_editor):
    rename(apps, schema_editor, old=NEW, new=OLD)


class Migration(migrations.Migration):
    dependencies = [("lifecycle", "0002_account_events_schedule"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(rename, rename_back)]

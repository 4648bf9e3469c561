from django.apps import AppConfig, apps
from django.contrib.admin.apps import AdminConfig
from django.db.models.signals import post_migrate


class LifecycleAdminConfig(AdminConfig):
    default_site = "lifecycle.backoffice.site.LifecycleAdminSite"


class LifecycleConfig(AppConfig):
    """The composition: its commands (seed_demo, ensure_roles) and the staff roles."""

    name = "lifecycle"

    def ready(self):
        from lifecycle.backoffice.roles import ensure_roles

        # The roles are auth groups: kept in step once per migrate, when auth's post_migrate is sent.
        post_migrate.connect(ensure_roles, sender=apps.get_app_config("auth"), dispatch_uid="lifecycle.ensure_roles")

from django.apps import AppConfig, apps
from django.contrib import admin
from django.contrib.admin.apps import SimpleAdminConfig
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks
from django.db.models.signals import post_migrate


class LifecycleAdminConfig(SimpleAdminConfig):
    """Django's admin, with the dashboard. Its modules are imported by the URLconf (lifecycle/urls.py)
    and by the system checks, not by every process: drain_mailroom, which skips the checks, reads no
    admin page, and importing them all is about a quarter of its start-up."""

    default_site = "lifecycle.backoffice.site.LifecycleAdminSite"

    def ready(self):
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(check_discovered_admin, checks.Tags.admin)


def check_discovered_admin(app_configs, **kwargs):
    """Django's checks of every registered admin, once every app's admin module is imported (the checks
    may run before the URLconf is)."""
    admin.autodiscover()
    return check_admin_app(app_configs, **kwargs)


class LifecycleConfig(AppConfig):
    """The composition: its commands (seed_demo, ensure_roles) and the staff roles."""

    name = "lifecycle"

    def ready(self):
        import lifecycle.scim.checks  # noqa: F401 (registers the deploy check of the SCIM views)
        from lifecycle.backoffice.roles import ensure_roles

        # The roles are auth groups: kept in step once per migrate, when auth's post_migrate is sent.
        post_migrate.connect(ensure_roles, sender=apps.get_app_config("auth"), dispatch_uid="lifecycle.ensure_roles")

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PlatformEventsConfig(AppConfig):
    name = "platform_events"
    verbose_name = "Platform events"

    def ready(self):
        from platform_events.roles import ensure_roles

        post_migrate.connect(ensure_roles, sender=self, dispatch_uid="platform_events.ensure_roles")

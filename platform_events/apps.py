from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PlatformEventsConfig(AppConfig):
    name = "platform_events"
    verbose_name = "Platform events"

    def ready(self):
        from platform_events.db.runtime_role import grant_runtime_privileges
        from platform_events.kafka import checks  # noqa: F401 (registers its database check)
        from platform_events.webhooks import secrets  # noqa: F401 (registers its deploy check)

        # Once per migrate, after every app's migrations: the runtime role's grants on what they made.
        post_migrate.connect(grant_runtime_privileges, sender=self, dispatch_uid="platform_events.runtime_grants")

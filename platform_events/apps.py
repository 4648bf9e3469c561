from django.apps import AppConfig


class PlatformEventsConfig(AppConfig):
    name = "platform_events"
    verbose_name = "Platform events"

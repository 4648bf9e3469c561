from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        from accounts import errors  # noqa: F401  registers the database's refusals (LA...)

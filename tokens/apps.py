from django.apps import AppConfig


class TokensConfig(AppConfig):
    name = "tokens"

    def ready(self):
        from tokens import (
            digests,  # noqa: F401  registers its deploy check (TOKEN_DIGEST_KEYS)
            errors,  # noqa: F401  registers the database's refusals (LT...)
            pages,  # noqa: F401  registers its deploy check (SUPPORT_CONTACT)
        )

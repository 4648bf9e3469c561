"""A psycopg connection of its own to the configured database, beside Django's.

LISTEN needs one (it must stay open and idle between notifications, and must not go through a
pooler in transaction mode such as PgBouncer's, which drops LISTEN).
"""

import psycopg
from django.db import connections


def direct_connection(alias: str = "default", **kwargs) -> psycopg.Connection:
    params = connections[alias].get_connection_params()
    return psycopg.connect(**{**params, **kwargs})

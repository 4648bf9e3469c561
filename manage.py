#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lifecycle.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db import NotSupportedError, OperationalError

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        # A bad setting is the operator's to fix: one sentence, no traceback.
        sys.exit(f"Configuration error: {error}")
    except OperationalError as error:
        # The database cannot be reached (a wrong DATABASE_URL, a server down): one sentence too.
        from platform_events.db.unreachable import database_unreachable

        if not database_unreachable(error):
            raise
        reason = " ".join(str(error).split())
        sys.exit(f"Database unreachable (DATABASE_URL, or the embedded server): {reason}")
    except NotSupportedError as error:
        # A server older than PostgreSQL 14 (Django's check on connecting): one sentence too.
        if " or later is required (found " not in str(error):
            raise
        sys.exit(f"Database not supported (DATABASE_URL): {error}")


if __name__ == "__main__":
    main()

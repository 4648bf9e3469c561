"""The WSGI application (gunicorn, uwsgi, mod_wsgi). A bad setting stops the server with one sentence."""

import os
import sys

from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lifecycle.settings")
try:
    application = get_wsgi_application()
except ImproperlyConfigured as error:
    sys.exit(f"Configuration error: {error}")

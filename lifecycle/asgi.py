"""The ASGI application (uvicorn, daphne). A bad setting stops the server with one sentence, as in wsgi.py."""

import os
import sys

from django.core.asgi import get_asgi_application
from django.core.exceptions import ImproperlyConfigured

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lifecycle.settings")
try:
    application = get_asgi_application()
except ImproperlyConfigured as error:
    sys.exit(f"Configuration error: {error}")

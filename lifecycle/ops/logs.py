"""The log line formats (settings.LOGGING; docs/production.md, "Logs"): plain text, or one JSON object per line.

Both hide the secret of an e-mail's link: ``/activate/<secret>`` and ``/recover/<secret>``
(tokens/urls.py) open an account to whoever holds them, and Django writes a request's path in its
own lines (``Not Found: /activate/...``, a refused CSRF check, runserver's request line); and any
other secret-shaped run of characters, wherever it stands. gunicorn's own lines go through them too
(lifecycle/ops/gunicorn_conf.py).
"""

import logging
import re

from pythonjsonlogger.json import JsonFormatter

# The link pages of tokens/urls.py; /recover/code/ is the page that takes a typed code, and a URL
# pattern's <str:secret> (lifecycle/ops/request_log.py) names no secret.
LINK_SECRET = re.compile(r"(/(?:activate|recover)/)(?!code/|<)[^/\s\"'?#]+")
HIDDEN = r"\1(hidden)"

# A JSON line's fields, in this order; none other (a library's extra attributes, such as Django's
# request or runserver's socket, would print their repr, the path with its secret included).
JSON_FIELDS = ["time", "level", "logger", "message", "request_id", "exception", "stack"]


# Whatever the path around it (/ACTIVATE/, /activate//, a mangled link, a request line gunicorn refused):
# a run of 43 or more URL-safe characters is taken for a secret: a link's secret has 43, an API key 46
# (lc_ and 43); a request id (a UUID, 36), django-q2's process names (40) and words have fewer.
SECRET_SHAPED = re.compile(r"[A-Za-z0-9_-]{43,}")


# A webhook endpoint's signing secret: whsec_ and standard base64, whose + / = break the run above.
WEBHOOK_SECRET = re.compile(r"whsec_[A-Za-z0-9+/=_-]+")


def hide_link_secrets(text: str) -> str:
    return SECRET_SHAPED.sub("(hidden)", WEBHOOK_SECRET.sub("whsec_(hidden)", LINK_SECRET.sub(HIDDEN, text)))


class PlainLines(logging.Formatter):
    """``2026-11-23 10:15:00,123 INFO django.request 3f2a...: Not Found: /x`` (``-`` outside a request)."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s %(request_id)s: %(message)s", defaults={"request_id": "-"})

    def format(self, record: logging.LogRecord) -> str:
        return hide_link_secrets(super().format(record))


class JsonLines(JsonFormatter):
    """python-json-logger's formatter: ``{"time": "2026-11-23T10:15:00.123456+00:00", "level": "INFO",
    "logger": "django.request", "message": "...", "request_id": "3f2a..."}``, the request id only
    when there is one, ``exception`` when the record has one."""

    def __init__(self):
        super().__init__(
            ["levelname", "name", "message"],
            rename_fields={"levelname": "level", "name": "logger", "exc_info": "exception", "stack_info": "stack"},
            timestamp="time",
        )

    def process_log_record(self, log_data: dict) -> dict:
        return {
            field: hide_link_secrets(value) if isinstance(value, str) else value
            for field in JSON_FIELDS
            if (value := log_data.get(field)) is not None
        }


class Brief(logging.Filter):
    """One short line, without the traceback: for django.security.DisallowedHost, which any scanner
    trips with a Host header of its choice (with the traceback, an 8,000-byte Host makes a
    33,000-character ERROR line, the header in it twice)."""

    LIMIT = 300

    def filter(self, record: logging.LogRecord) -> bool:
        message = hide_link_secrets(record.getMessage())  # before the cut, which could leave part of a secret
        record.msg, record.args = (message[: self.LIMIT] + " (cut)" if len(message) > self.LIMIT else message), ()
        record.exc_info = record.exc_text = None
        # The client's doing, not the server's: a warning, so an alert on the error rate stays quiet.
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class NotFoundToldOnce(logging.Filter):
    """Drops Django's own lines of a 404 (django.request's "Not Found: /x", runserver's request line):
    lifecycle.requests' line says it already, with the path as it came (lifecycle/ops/request_log.py),
    and a probe or a missing icon is then one line, not three."""

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "status_code", None) != 404

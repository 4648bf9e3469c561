"""The id of the request being served, shared by its log lines, its audit rows and the work it queued.

``lifecycle/ops/request_log.py`` gives every request its id; ``RequestIdFilter`` writes it on each log
record; the audit trail records the same one (``platform_events.audit.context.request_origin``); a django-q2
task given the request's origin logs under it again while it runs (``audit_context(origin=...)``).
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.core.signals import request_finished
from django.dispatch import receiver

_current: ContextVar[str | None] = ContextVar("request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request (or of the queued request's task) being served, if any."""
    return _current.get()


def serve_under(request_id: str) -> None:
    """Log under ``request_id`` until the response is closed. Not a ``with`` block: Django logs a 4xx or
    5xx answer after the last middleware has returned (BaseHandler.get_response), runserver its
    request line later still."""
    _current.set(request_id)


@receiver(request_finished)
def _forget_request_id(**kwargs) -> None:
    # A server thread serves request after request: the next one must not log under this id.
    _current.set(None)


@contextmanager
def request_id_context(request_id: str | None) -> Iterator[None]:
    """Log under ``request_id`` meanwhile (a task doing a request's work); None changes nothing."""
    if not request_id:
        yield
        return
    token = _current.set(request_id)
    try:
        yield
    finally:
        _current.reset(token)


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to a record written while a request (or its queued work) is served."""

    def filter(self, record: logging.LogRecord) -> bool:
        if request_id := _current.get():
            record.request_id = request_id
        return True

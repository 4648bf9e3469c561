import pytest

from tests.smtp import SMTPServer


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on loopback, and Django's SMTP backend pointed at it."""
    server = SMTPServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    yield server
    server.stop()

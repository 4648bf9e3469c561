import re

from django.core import mail

from tests.support import run_queued_tasks
from tokens.mailroom.drain import drain

PASSWORD = "correct horse battery staple 7"
NEW_PASSWORD = {"password": PASSWORD, "password_again": PASSWORD}


def deliver() -> int:
    """Run the queued public requests, then the mailroom; how many e-mails left."""
    before = len(mail.outbox)
    run_queued_tasks()
    drain()
    return len(mail.outbox) - before


def page_text(response, typed: str = "") -> str:
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())
    return page.replace(f'value="{typed}"', 'value="(typed)"') if typed else page

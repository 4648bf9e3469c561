"""django-q2 tasks: the mailroom's drain (scheduled by tokens/migrations/0003_mailroom_schedule.py), and
the work of the public request forms, queued by tokens/views.py so that a request costs the same
whether or not its login or address names an account (docs/public-pages.md, "No oracle")."""

import functools
import logging
import time

from django.conf import settings
from django.db import DatabaseError, connection
from django_q.tasks import async_task

from accounts.errors import EmailAlreadyClaimed, InvalidEmail, InvalidLogin, LoginTaken
from accounts.selectors import email_is_claimed
from accounts.services import account_sign_up
from platform_events.audit.context import audit_context
from platform_events.db.unreachable import database_unreachable
from tokens.mailroom.drain import drain
from tokens.models import TokenAction
from tokens.services import TOKEN_HOLDER, public_limit, token_request_mail

logger = logging.getLogger(__name__)


def drain_mailroom() -> str:
    return drain().summary()


def queue_public_request(task: str, *args) -> None:
    # save=False: a finished task keeps no copy of its arguments (addresses, a password hash).
    async_task(f"tokens.tasks.{task}", *args, save=False)


def through_a_database_restart(task):
    """Run ``task`` again, on a new connection, while the database cannot be reached: for up to half
    the worker's time limit (``Q_TIMEOUT``), waiting 0.5 s, then 1 s, 2 s, up to 5 s between tries.

    The page that queued the task has already told the person to check their e-mail. django-q2 runs a
    failed task again only after ``Q_RETRY`` (120 s by default), long after they gave up waiting; a
    restart of PostgreSQL lasts seconds. A task still failing at the end is left to django-q2's retry.
    Any other database error is a bug or a refusal and fails at once."""

    @functools.wraps(task)
    def run(*args):
        deadline = time.monotonic() + settings.Q_CLUSTER["timeout"] / 2
        pause = 0.5
        while True:
            try:
                return task(*args)
            except DatabaseError as error:
                if not database_unreachable(error) or time.monotonic() + pause > deadline:
                    raise
                logger.warning("%s: the database is unreachable; trying again in %.1f s", task.__name__, pause)
            connection.close()  # the broken session is not reused: the next query opens a new one
            time.sleep(pause)
            pause = min(pause * 2, 5.0)

    return run


@through_a_database_restart
def sign_up(email: str, login: str, password_hash: str, origin: dict[str, str]) -> None:
    with audit_context(origin=origin):
        # Twice at most: an address claimed by a deprovisioned account that is erased between the two
        # reads below is free again, and the sign-up is made after all.
        for _ in range(2):
            try:
                made = account_sign_up(email=email, login=login, password_hash=password_hash)
            except (LoginTaken, EmailAlreadyClaimed, InvalidEmail, InvalidLogin) as refusal:
                # Taken meanwhile by another sign-up: the page had already answered; nothing was made.
                logger.info("public sign-up not made: %s", refusal.code)
                return
            if made is not None:
                return
            # The address is claimed. If its account is deprovisioned, the address's owner is told how
            # to restore it instead (docs/rules.md, "Deprovisioning"); an active one gets nothing.
            restore = token_request_mail(
                identifier=email,
                action=TokenAction.RESTORE,
                actor=TOKEN_HOLDER,
                per_account=public_limit("mail-per-account"),
            )
            if restore is not None or email_is_claimed(email):
                return


@through_a_database_restart
def send_again(identifier: str, action: str, origin: dict[str, str]) -> None:
    with audit_context(origin=origin):
        token_request_mail(
            identifier=identifier,
            action=TokenAction(action),
            actor=TOKEN_HOLDER,
            per_account=public_limit("mail-per-account"),
        )

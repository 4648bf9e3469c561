"""django-q2 tasks: the mailroom's drain (scheduled by tokens/migrations/0003_mailroom_schedule.py), and
the work of the public request forms, queued by tokens/views.py so that a request costs the same
whether or not its login or address names an account (README, "Public pages")."""

import logging

from django_q.tasks import async_task

from accounts.errors import EmailAlreadyClaimed, InvalidEmail, InvalidLogin, LoginTaken
from accounts.services import account_sign_up
from platform_events.audit import audit_context
from tokens.mailroom.drain import drain
from tokens.models import TokenAction
from tokens.services import TOKEN_HOLDER, public_limit, token_request_mail

logger = logging.getLogger(__name__)


def drain_mailroom() -> str:
    return drain().summary()


def queue_public_request(task: str, *args) -> None:
    # save=False: a finished task keeps no copy of its arguments (addresses, a password hash).
    async_task(f"tokens.tasks.{task}", *args, save=False)


def sign_up(email: str, login: str, password_hash: str, origin: dict[str, str]) -> None:
    with audit_context(origin=origin):
        try:
            account_sign_up(email=email, login=login, password_hash=password_hash)
        except (LoginTaken, EmailAlreadyClaimed, InvalidEmail, InvalidLogin) as refusal:
            # Taken meanwhile by another sign-up: the page had already answered; nothing was made.
            logger.info("public sign-up not made: %s", refusal.code)


def send_again(identifier: str, action: str, origin: dict[str, str]) -> None:
    with audit_context(origin=origin):
        token_request_mail(
            identifier=identifier,
            action=TokenAction(action),
            actor=TOKEN_HOLDER,
            per_account=public_limit("mail-per-account"),
        )

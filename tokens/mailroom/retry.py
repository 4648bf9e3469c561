"""Making dead or retrying mail due again (the admin's "Retry mailing now")."""

from django.db import transaction
from django.db.models.functions import Now

from platform_events.audit.context import audit_context
from tokens.models import MailState


def retry_now(tokens, *, actor) -> int:
    """Make dead or retrying tokens due at once (one more attempt); returns how many still could be.
    Each is audited as token.mail_changed, with ``actor`` (tokens/sql/0008_history_rules.sql)."""
    with transaction.atomic(), audit_context(actor=actor):
        return tokens.filter(
            mail_state__in=[MailState.RETRYING, MailState.DEAD],
            expires_at__gt=Now(),
            consumed_at__isnull=True,
            superseded_at__isnull=True,
            code_digest__isnull=True,  # a mailed token is never mailed again (tokens/sql/0015_digests.sql)
        ).update(mail_state=MailState.RETRYING, mail_next_attempt_at=Now())

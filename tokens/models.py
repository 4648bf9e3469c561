"""Tokens and mail runs, mapped onto the tables of tokens/sql/0001_tokens.sql (``managed = False``).

A token's secret and code are credentials: they are never shown in the admin, logged or put in
an audit row. Links carry the secret as URL-safe text (tokens/links.py). Once the token is mailed
both are gone (None): the row keeps only their digests (tokens/sql/0015_digests.sql,
tokens/digests.py), never shown either.
"""

from django.db import models
from django.db.models.functions import Now

from accounts.models import Account


class MaxCodeAttempts(models.Func):
    """How many wrong codes burn a token: the database's tokens_max_code_attempts(), the one place
    that says it (tokens/sql/0006_code_attempts.sql)."""

    function = "tokens_max_code_attempts"
    output_field = models.SmallIntegerField()


class TokenAction(models.TextChoices):
    ACTIVATION = "activation"
    PASSWORD_RECOVERY = "password_recovery"
    # Mailed to the address a deprovisioned account keeps; its link reprovisions the account
    # (docs/rules.md, "Deprovisioning").
    RESTORE = "restore"
    # Mailed when a person asks to delete their account; its link deprovisions it, and the restore
    # e-mail follows (docs/public-pages.md, "Deleting an account").
    DELETION = "deletion"
    # A notice, mailed when an active account's password changes: its secret and code open nothing
    # (docs/public-pages.md, "Your account").
    PASSWORD_CHANGED = "password_changed"
    # A change of address (docs/rules.md, "Changing the address"): mailed to the new address, its link
    # makes it the account's; the undo, mailed to the old one, puts that back for 7 days.
    EMAIL_CHANGE = "email_change"
    EMAIL_CHANGE_UNDO = "email_change_undo"


ACTION_LABELS = dict(TokenAction.choices)


class MailState(models.TextChoices):
    QUEUED = "queued"
    RETRYING = "retrying"
    SENT = "sent"
    DEAD = "dead"
    SKIPPED = "skipped"


class TokenState(models.TextChoices):
    """What a token can still do, computed from its row (tokens.selectors.token_state), not stored."""

    VALID = "valid"
    USED = "used"
    EXPIRED = "expired"
    REPLACED = "replaced"
    # Too many wrong codes: the code no longer works, the e-mailed link still does (tokens/sql/0012).
    CODE_BLOCKED = "code_blocked", "Code blocked"


class Token(models.Model):
    id = models.BigAutoField(primary_key=True)
    action = models.CharField(max_length=17, choices=TokenAction)
    # None once mailed (only digests stay).
    secret = models.BinaryField(editable=False, null=True)
    code = models.CharField(
        max_length=5, editable=False, null=True, db_default=models.Func(function="lifecycle_random_code")
    )
    # What stays of them once mailed (tokens/sql/0015_digests.sql): sha256 of the secret, written by the
    # database; HMAC-SHA256 of the code under TOKEN_DIGEST_KEYS[code_digest_key], written by the
    # mailroom's sent-mark. Never shown, like the credentials themselves (tokens/admin.py SHOWN_FIELDS).
    secret_digest = models.BinaryField(editable=False)
    code_digest = models.BinaryField(editable=False, null=True)
    code_digest_key = models.CharField(max_length=64, editable=False, null=True)
    account = models.ForeignKey(Account, on_delete=models.DO_NOTHING, db_column="account", related_name="tokens")
    expires_at = models.DateTimeField()
    consumed_at = models.DateTimeField(null=True, blank=True)
    # How it was consumed: "link" or "code" (tokens/sql/0012; None before that, or by a plain psql UPDATE),
    # "password" for a deletion the account page confirmed (tokens/sql/0024), or "identity_provider" for
    # an activation an identity provider vouched for (tokens/sql/0027).
    consumed_with = models.CharField(max_length=20, null=True, blank=True, editable=False)
    # The address an address change's token is for and mailed to (tokens/sql/0026); None for the others.
    email = models.CharField(max_length=254, null=True, blank=True, editable=False)
    created_at = models.DateTimeField(db_default=Now())
    failed_attempts = models.SmallIntegerField(db_default=0)
    superseded_at = models.DateTimeField(null=True, blank=True)
    mail_state = models.CharField(max_length=8, choices=MailState, db_default=MailState.QUEUED)
    # Failed attempts at mailing it (an e-mail the SMTP server accepted does not count, however often a
    # person asked for it again): MAILROOM_MAX_ATTEMPTS of them make it dead.
    mail_attempts = models.SmallIntegerField(db_default=0)
    mail_next_attempt_at = models.DateTimeField(db_default=Now())
    mail_lease_until = models.DateTimeField(null=True, blank=True)
    mail_claim = models.UUIDField(null=True, blank=True)
    mailed_at = models.DateTimeField(null=True, blank=True)
    mail_error = models.TextField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "tokens"
        ordering = ["-id"]
        # Support's "Retry mailing now" without the right to change tokens, which no role has.
        permissions = [("retry_mail", "Can retry mailing tokens now")]

    def __str__(self):
        # By a dict: get_action_display() rebuilds the choices per call, and a list names 100 tokens.
        return f"{ACTION_LABELS.get(self.action, self.action)} token {self.id}"


class JobType(models.TextChoices):
    MAILROOM = "mailroom"


class Job(models.Model):
    """One run of a job (e.g. one drain of the mail queue), kept as a history of runs. A mail run that
    claims nothing leaves no row (tokens/mailroom/drain.py)."""

    id = models.BigAutoField(primary_key=True, verbose_name="run")
    job_type = models.CharField(max_length=16, choices=JobType, verbose_name="job", help_text="What ran.")
    last_seq = models.BigIntegerField(
        null=True,
        blank=True,
        verbose_name="highest token id",
        help_text="The highest token id the run handled, kept for the record only: nothing is mailed by cursor.",
    )
    started_at = models.DateTimeField(
        db_default=Now(), verbose_name="started", help_text="When it claimed its first e-mails."
    )
    finished_at = models.DateTimeField(
        null=True,
        blank=True,
        verbose_name="finished",
        help_text="Not yet while it runs. A run killed mid-way is closed by a later one once it made no progress for two leases.",
    )
    # When the run last recorded its counts (after each batch); a row whose progress stopped was killed.
    progress_at = models.DateTimeField(
        null=True,
        blank=True,
        verbose_name="last progress",
        help_text="When it last recorded its counts (after each batch); stuck for two leases: killed.",
    )
    claimed = models.IntegerField(db_default=0, verbose_name="claimed", help_text="Due e-mails it took to send.")
    sent = models.IntegerField(db_default=0, verbose_name="sent", help_text="Accepted by the SMTP server.")
    failed = models.IntegerField(
        db_default=0,
        verbose_name="failed",
        help_text="Not accepted: retrying after a backoff, or dead.",
    )
    error = models.TextField(
        null=True,
        blank=True,
        verbose_name="error",
        help_text="Why it stopped early: SMTP server unreachable, connection lost, killed.",
    )

    class Meta:
        managed = False
        db_table = "jobs"
        ordering = ["-id"]
        verbose_name = "mail run"
        verbose_name_plural = "mail runs"

    def __str__(self):
        return f"{self.job_type} run {self.id}"
